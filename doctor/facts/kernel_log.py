"""The kernel log of this boot, and the known messages in it (rocmdoctor.kb.kernel_log).

`kernel_log(host)` runs `dmesg`, and when that fails or prints nothing `journalctl -k -b
--no-pager`; when neither gives lines it says why (`/proc/sys/kernel/dmesg_restrict` = 1 keeps
the log from users without CAP_SYSLOG). At most the last MAX_LOG_CHARS characters and
MAX_LINES lines are kept, each line cut at MAX_LINE_CHARS: a 50 MB log or binary garbage is
read, never a crash, never a hang.

`known_causes(log)` matches every line against the catalogue and gives each distinct cause
once, with how often it appeared and its last line and timestamp.

By hand: `dmesg` (or `sudo dmesg`), `journalctl -k -b --no-pager`,
`cat /proc/sys/kernel/dmesg_restrict`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import CommandResult, Host, command_key
from rocmdoctor.kb.kernel_log import KERNEL_MESSAGES
from rocmdoctor.kb.messages import KnownMessage

DMESG = ("dmesg",)
JOURNAL = ("journalctl", "-k", "-b", "--no-pager")
RESTRICT_FILE = "/proc/sys/kernel/dmesg_restrict"
MAX_LOG_CHARS = 4 * 1024 * 1024
MAX_LINES = 200_000
MAX_LINE_CHARS = 2048  # printk lines are at most 1024 bytes (LOG_LINE_MAX)

_FLAGS = re.IGNORECASE
# "Apr 12 00:54:42 host kernel: ", "nov 07 01:36:56 host kernel: ", "2024-11-07T01:36:56+0100
# host kernel: ", "kernel: ", "archlinux kernel: ", "host systemd-modules-load[602]: ".
_SYSLOG_DATE = re.compile(r"^(\w{3} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*)\s+")
_SYSLOG_TAG = re.compile(r"^(?:\S+\s+)?(?:kernel|[\w.@-]+\[\d+\]):\s")
# "[    7.026427] ", "[  +0.000012] ", "[Sat Jan  7 14:25:56 2023] ", "[12月25 19:09] "; not
# "[drm:gfx_v9_0_sw_init [amdgpu]] " or "[gfxhub] ", which are part of the message.
_BRACKET = re.compile(r"^\s*\[([\s\d.+:]{1,20}|[^\[\]\n]{0,20}\d\d:\d\d[^\[\]\n]{0,20})\]\s?")


@dataclass(frozen=True)
class LogLine:
    stamp: Optional[str]  # the timestamp as printed ("7.026427", "Sat Jan  7 14:25:56 2023")
    message: str  # the text after the timestamp and syslog prefix
    raw: str  # the line as read (continuation lines joined)


@dataclass(frozen=True)
class KernelLog:
    source: Optional[str]  # the command key that gave the lines; None when none did
    lines: tuple[LogLine, ...]
    problem: Optional[str] = None  # why there are no lines, in words
    restricted: bool = False  # kernel.dmesg_restrict = 1
    truncated: bool = False  # only the end of a longer log was kept


def split_line(raw: str) -> LogLine:
    """The timestamp and message of one kernel-log line in any of dmesg's, dmesg -T's,
    dmesg -H's, journalctl's or syslog's formats; a line with none is all message."""
    stamp: Optional[str] = None
    rest = raw
    date = _SYSLOG_DATE.match(rest)
    if date:
        stamp = date.group(1)
        rest = rest[date.end():]
    tag = _SYSLOG_TAG.match(rest)
    if tag:
        rest = rest[tag.end():]
    bracket = _BRACKET.match(rest)
    if bracket:
        stamp = stamp or bracket.group(1).strip()
        rest = rest[bracket.end():]
    return LogLine(stamp, rest.strip(), raw.strip())


def _continues(prev: LogLine, line: LogLine, raw: str) -> bool:
    """NVRM prints one message over several lines ('NVRM: API mismatch: ... but' / 'NVRM: this
    kernel module has ...'): indented with no timestamp, or under the same timestamp."""
    if "NVRM:" not in prev.message or not line.message.startswith("NVRM:"):
        return False
    if line.message.startswith("NVRM: Xid"):
        return False
    if line.stamp is None and raw[:1].isspace():
        return True
    return line.stamp == prev.stamp and not prev.message.rstrip().endswith((".", "!"))


def parse_kernel_log(text: str) -> list[LogLine]:
    """Lines of a kernel log, continuation lines joined; never raises."""
    lines: list[LogLine] = []
    # syslog writes a multi-line message as one line with "#012" for each newline.
    for raw in text.replace("#012", "\n ").splitlines()[-MAX_LINES:]:
        raw = raw[:MAX_LINE_CHARS]
        if not raw.strip():
            continue
        line = split_line(raw)
        if lines and _continues(lines[-1], line, raw):
            prev = lines[-1]
            tail = line.message[len("NVRM:"):].strip()
            lines[-1] = LogLine(prev.stamp, f"{prev.message} {tail}", f"{prev.raw} {tail}")
        else:
            lines.append(line)
    return lines


def _lines_of(result: CommandResult) -> tuple[list[LogLine], bool]:
    text = result.stdout
    truncated = len(text) > MAX_LOG_CHARS
    if truncated:
        text = text[-MAX_LOG_CHARS:]
        text = text[text.find("\n") + 1:]  # drop the cut first line
    lines = parse_kernel_log(text)
    # journalctl prints "-- No entries --" (and, without permission, a hint) instead of lines.
    lines = [ln for ln in lines if not (ln.message.startswith("-- ") and ln.stamp is None)
             and not ln.message.startswith(("Hint: You are currently not seeing messages",
                                            "Users in groups"))]
    return lines, truncated


def _said(result: CommandResult) -> str:
    if result.timed_out:
        return "did not finish"
    if result.not_found:
        return "is not installed"
    for text in (result.stderr, result.stdout):
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        if first:
            return f"said '{first[:200]}'"
    return "printed nothing" if result.returncode == 0 else f"exited {result.returncode}"


def kernel_log(host: Host) -> KernelLog:
    """This boot's kernel log (memoised)."""

    def compute() -> KernelLog:
        attempts = []
        for argv in (DMESG, JOURNAL):
            result = host.run(list(argv))
            if result.ok:
                lines, truncated = _lines_of(result)
                if lines:
                    return KernelLog(command_key(argv), tuple(lines), truncated=truncated)
            attempts.append(f"`{command_key(argv)}` {_said(result)}")
        restricted = (host.read_file(RESTRICT_FILE) or "").strip() == "1"
        problem = "; ".join(attempts)
        if restricted:
            problem = "kernel.dmesg_restrict = 1 keeps the kernel log from this user (" + \
                problem + ")"
        return KernelLog(None, (), problem, restricted)

    return host.memo("kernel:log", compute)


@dataclass(frozen=True)
class LogCause:
    """One known message and every line of the log that shows it."""

    entry: KnownMessage
    count: int
    first: LogLine
    last: LogLine
    lines: tuple[LogLine, ...]

    @property
    def last_stamp(self) -> Optional[str]:
        return self.last.stamp


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern, _FLAGS)
    return found


def _any(catalogue: Sequence[KnownMessage]) -> re.Pattern[str]:
    return _compiled("|".join(f"(?:{p})" for e in catalogue for p in e.patterns))


def matches(entry: KnownMessage, text: str) -> bool:
    if not any(_compiled(p).search(text) for p in entry.patterns):
        return False
    return not any(_compiled(u).search(text) for u in entry.unless)


def known_causes(lines: Sequence[LogLine],
                 catalogue: Sequence[KnownMessage] = KERNEL_MESSAGES) -> list[LogCause]:
    """Each catalogue entry the lines show, once, in the order of first appearance; an entry
    that yields to a more precise one that is also present is left out."""
    prefilter = _any(catalogue)
    hits: dict[str, list[LogLine]] = {}
    for line in lines:
        if not prefilter.search(line.message):
            continue
        for entry in catalogue:
            if matches(entry, line.message):
                hits.setdefault(entry.key, []).append(line)
    by_key = {e.key: e for e in catalogue}
    causes = [LogCause(by_key[k], len(v), v[0], v[-1], tuple(v)) for k, v in hits.items()
              if not set(by_key[k].yields_to) & set(hits)]
    order = {id(line): i for i, line in enumerate(lines)}
    return sorted(causes, key=lambda c: order.get(id(c.first), 0))


def log_causes(host: Host) -> list[LogCause]:
    """The known causes in this boot's kernel log (memoised; empty when it is unreadable)."""
    return host.memo("kernel:causes", lambda: known_causes(kernel_log(host).lines))


def cause(host: Host, key: str) -> Optional[LogCause]:
    return next((c for c in log_causes(host) if c.entry.key == key), None)
