"""Secure Boot and kernel lockdown: whether the kernel will refuse an unsigned module.

`mokutil --sb-state` prints "SecureBoot enabled" or "SecureBoot disabled", sometimes followed
by "SecureBoot validation is disabled in shim" (shim does not verify, so signatures are not
enforced) or "Platform is in Setup Mode", and "EFI variables are not supported on this system"
on a legacy-BIOS boot. Without mokutil, the EFI variable SecureBoot-8be4df61-... holds 4 bytes
of attributes and then one byte, 1 when Secure Boot is on. /sys/kernel/security/lockdown reads
"[none] integrity confidentiality" with the active mode in brackets (security/lockdown).

By hand: `mokutil --sb-state`; `od -An -t u1 /sys/firmware/efi/efivars/SecureBoot-*`;
`cat /sys/kernel/security/lockdown`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from rocmdoctor.host import Host

SB_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
LOCKDOWN_FILE = "/sys/kernel/security/lockdown"
MOKUTIL = ("mokutil", "--sb-state")
# Where DKMS keeps the key it signs modules with: dkms 3 (/var/lib/dkms/mok.pub) and Ubuntu's
# shim-signed (/var/lib/shim-signed/mok/MOK.der).
DKMS_KEYS = ("/var/lib/dkms/mok.pub", "/var/lib/shim-signed/mok/MOK.der")


@dataclass(frozen=True)
class SecureBoot:
    enabled: Optional[bool]  # None: not known (no mokutil, no EFI variable)
    validation_off: bool  # shim does not verify ("SecureBoot validation is disabled in shim")
    setup_mode: bool
    lockdown: Optional[str]  # none, integrity, confidentiality; None when not readable
    evidence: tuple[str, ...]  # the lines or values it was decided from
    key: Optional[str]  # a DKMS signing key on this machine, to enrol

    @property
    def enforcing(self) -> bool:
        """Unsigned modules are refused: Secure Boot on and verified, or lockdown active."""
        return bool(self.enabled and not self.validation_off) or self.lockdown in (
            "integrity", "confidentiality")


def parse_sb_state(text: str) -> tuple[Optional[bool], bool, bool, list[str]]:
    """(enabled, validation off, setup mode, the lines that said so) from mokutil's output."""
    enabled: Optional[bool] = None
    lines = []
    validation_off = setup = False
    for raw in text.splitlines():
        line = raw.strip()
        m = re.fullmatch(r"SecureBoot (enabled|disabled)", line, re.IGNORECASE)
        if m:
            enabled = m.group(1).lower() == "enabled"
            lines.append(line)
        elif re.fullmatch(r"SecureBoot validation is disabled in shim", line, re.IGNORECASE):
            validation_off = True
            lines.append(line)
        elif re.fullmatch(r"Platform is in Setup Mode", line, re.IGNORECASE):
            setup = True
            lines.append(line)
    return enabled, validation_off, setup, lines


def parse_efi_var(text: Optional[str]) -> Optional[bool]:
    """The SecureBoot EFI variable: 4 attribute bytes, then 1 (on) or 0 (off)."""
    if text is None or len(text) != 5:
        return None
    return {1: True, 0: False}.get(ord(text[4]))


def parse_lockdown(text: Optional[str]) -> Optional[str]:
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1).lower() if m else None


def secure_boot(host: Host) -> SecureBoot:
    """What this machine says about Secure Boot (memoised)."""

    def compute() -> SecureBoot:
        result = host.run(list(MOKUTIL))
        enabled, validation_off, setup, evidence = parse_sb_state(
            result.stdout + "\n" + result.stderr)
        if enabled is None:
            enabled = parse_efi_var(host.read_file(SB_VAR))
            if enabled is not None:
                evidence.append(f"{SB_VAR}: Secure Boot {'on' if enabled else 'off'}")
        raw_lockdown = host.read_file(LOCKDOWN_FILE)
        lockdown = parse_lockdown(raw_lockdown)
        if lockdown is not None and raw_lockdown is not None:
            evidence.append(f"{LOCKDOWN_FILE}: {raw_lockdown.strip()}")
        key = next((k for k in DKMS_KEYS if host.exists(k)), None)
        return SecureBoot(enabled, validation_off, setup, lockdown, tuple(evidence), key)

    return host.memo("secure-boot", compute)
