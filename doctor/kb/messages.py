"""The shape of a known message: shared by the error catalogue (kb/errors.py, read by
`rocmdoctor explain`) and the kernel-log catalogue (kb/kernel_log.py, read by the kernel-log
check and by `explain` alike)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DMESG_AMDGPU = "sudo dmesg | grep -iE 'amdgpu|kfd'"
DMESG_GPU = "sudo dmesg | grep -iE 'amdgpu|kfd|nvrm'"


@dataclass(frozen=True)
class Variant:
    """A fix for a situation the text or the machine shows (`when` names a condition of
    rocmdoctor.explain.context: windows, nvidia_paste ...); the first that holds replaces the
    entry's fix."""

    when: str
    fix: str
    commands: tuple[str, ...] = ()
    note: str = ""  # why this fix, as the answer says it


@dataclass(frozen=True)
class KnownMessage:
    key: str
    title: str
    kind: str  # error, kernel-log, not-a-setting (copied from a blog, does not exist), harmful
    patterns: tuple[str, ...]  # regular expressions, case-insensitive, matched per line
    cause: str
    fix: str
    check: Optional[str]  # the `rocmdoctor check` id that confirms it
    source: str
    commands: tuple[str, ...] = ()
    needs_root: bool = False
    needs_relogin: bool = False
    unless: tuple[str, ...] = ()  # a line matching one of these does not count
    yields_to: tuple[str, ...] = ()  # keys of more precise entries that replace this one
    # keys of entries that, found earlier in the same text, caused this one (a page fault
    # logged after a GPU reset is the reset's); found later, they do not replace it
    follows: tuple[str, ...] = ()
    context: Optional[str] = None  # rocmdoctor.explain function that adds specific facts
    variable: Optional[str] = None  # the environment variable an entry is about
    # How bad the message is where the kernel-log check finds it: "fail" (the GPU or its driver
    # is unusable), "warn" (a fault or reset that happened and may happen again) or "info".
    level: str = "warn"
    # Added for `explain` (every field defaults, so existing entries keep their meaning):
    container_fix: Optional[str] = None  # the fix inside a container, when it differs
    container_commands: tuple[str, ...] = ()
    wsl_fix: Optional[str] = None  # the fix under WSL, when it differs
    wsl_commands: tuple[str, ...] = ()
    unless_text: tuple[str, ...] = ()  # anywhere in the text: the entry does not count
    requires: tuple[str, ...] = ()  # rocmdoctor.explain conditions that must all hold
    threads: int = 0  # distinct public tracker threads seen with it (0: not counted)
    variants: tuple[Variant, ...] = ()  # fixes for situations, tried before container/WSL
    library: Optional[str] = None  # the library whose message this is (its tracker is asked)
