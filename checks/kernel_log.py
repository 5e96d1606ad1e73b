"""kernel-log: what the kernel already said about the GPU driver during this boot.

Reads `dmesg` (else `journalctl -k -b --no-pager`) and recognises the amdgpu, KFD, NVIDIA
(Xid, NVRM) and Secure Boot lines of the catalogue in rocmdoctor.kb.kernel_log, the same one
`rocmdoctor explain` reads. Each distinct cause is reported once, with how many lines show it
and the timestamp of the last one.

By hand: `sudo dmesg | grep -iE 'amdgpu|kfd|nvrm|lockdown|AMD-Vi|AER'`, or pipe the whole log
into `rocmdoctor explain` (`sudo dmesg | rocmdoctor explain`).
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.kernel_log import MAX_LOG_CHARS, LogCause, kernel_log, log_causes
from rocmdoctor.facts.platform import is_wsl, platform_kind
from rocmdoctor.host import Host
from rocmdoctor.kb.messages import DMESG_GPU
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Severity, Status

DMESG_MAN = "https://man7.org/linux/man-pages/man1/dmesg.1.html"
EXPLAIN = "sudo dmesg | rocmdoctor explain"
_ORDER = {"fail": 0, "warn": 1, "info": 2}
_SEVERITY = {"fail": Severity.ERROR, "warn": Severity.HINT, "info": Severity.INFO}


def cause_text(cause: LogCause) -> str:
    """'<title> (N lines, last at <stamp>): <first line>' for a finding."""
    line = cause.first.message
    line = line if len(line) <= 220 else line[:217] + "..."
    count = f"{cause.count} line{'s' if cause.count != 1 else ''}"
    when = f", last at {cause.last_stamp}" if cause.last_stamp else ""
    return f"{cause.entry.title} ({count}{when}): {line}"


class KernelLogCheck(Check):
    id = "kernel-log"
    title = "Kernel log (amdgpu, KFD, NVIDIA, Secure Boot)"
    source = DMESG_MAN

    def applies(self, host: Host) -> Optional[str]:
        if platform_kind(host) == "cpu":
            return "no AMD or NVIDIA GPU or driver found"
        if is_wsl(host):
            return "WSL2: the GPU driver runs in Windows, this kernel log does not show it"
        return None

    def run(self, host: Host) -> CheckResult:
        log = kernel_log(host)
        if log.source is None:
            return self.result(
                Status.SKIP, f"the kernel log is not readable here: {log.problem}; read it with "
                f"`{DMESG_GPU}`",
                fix=Fix("Read the kernel log as root and paste it into rocmdoctor explain.",
                        (EXPLAIN,), needs_root=True))
        causes = sorted(log_causes(host), key=lambda c: _ORDER.get(c.entry.level, 1))
        findings = [Finding(_SEVERITY.get(c.entry.level, Severity.HINT), cause_text(c))
                    for c in causes]
        if log.truncated:
            findings.append(Finding.info(
                f"the kernel log is longer than {MAX_LOG_CHARS // 2**20} MiB: only its last "
                f"{MAX_LOG_CHARS // 2**20} MiB were read"))
        problems = [c for c in causes if c.entry.level in ("fail", "warn")]
        count = len(log.lines)
        where = f"{log.source}: {count} line{'s' if count != 1 else ''}"
        if not problems:
            return self.passed(f"no known GPU driver problem in the kernel log ({where})",
                               findings)
        status = Status.FAIL if problems[0].entry.level == "fail" else Status.WARN
        titles = [c.entry.title for c in problems]
        more = f" and {len(titles) - 2} more" if len(titles) > 2 else ""
        summary = f"the kernel log shows {'; '.join(titles[:2])}{more} ({where})"
        top = problems[0].entry
        text = top.fix
        commands = list(top.commands)
        if len(problems) > 1:
            text += " For every cause's own fix, pass the log to rocmdoctor explain."
            commands.append(EXPLAIN)
        needs_root = top.needs_root or any(c.startswith("sudo ") for c in commands)
        return self.result(status, summary, findings,
                           Fix(text, tuple(dict.fromkeys(commands)), needs_root,
                               top.needs_relogin), top.source)
