"""miopen-db: MIOpen's user database and kernel cache are on a local, writable file system
with room to grow.

MIOpen keeps its tuning results (user perf/find db, ~/.config/miopen) and compiled kernels
(~/.cache/miopen) in SQLite files. On a read-only, full or network home (NFS, Lustre, GPFS,
CIFS, BeeGFS, ...) shared by many ranks or nodes, they fail with "disk I/O error",
"database disk image is malformed" or a crash while creating the files.

By hand: `echo "${MIOPEN_USER_DB_PATH:-$HOME/.config/miopen}" "${MIOPEN_CUSTOM_CACHE_DIR:-
$HOME/.cache/miopen}"; stat -f -c '%T' <folder>; df -h <folder>; test -w <folder> && echo ok`.
"""

from __future__ import annotations

from typing import Optional

from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.miopen_db import DbLocation, local_folder, miopen_locations
from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import filesystems
from rocmdoctor.kb import miopen as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _line(loc: DbLocation) -> str:
    origin = f"${loc.variable}" if loc.from_variable else "MIOpen's default"
    fs = loc.fs_name
    free = f", {_gib(loc.statfs.free_bytes)} free" if loc.statfs and loc.statfs.blocks else ""
    where = "" if loc.existing == loc.path else f" (not created yet; {loc.existing} exists)"
    return f"MIOpen {loc.what}: {loc.path} ({origin}){where}: {fs}{free}"


def export_lines(host: Host) -> tuple[str, ...]:
    """Per-user (and per-job under Slurm) folders on node-local disk, created beforehand."""
    base, _ = local_folder(host)
    job = "-$SLURM_JOB_ID" if environment(host).get("SLURM_JOB_ID") else ""
    return (f'export {kb.USER_DB_VAR}="{base}/miopen-config-$USER{job}"',
            f'export {kb.CACHE_VAR}="{base}/miopen-cache-$USER{job}"',
            f'mkdir -p "${kb.USER_DB_VAR}" "${kb.CACHE_VAR}"')


class MiopenDb(Check):
    id = "miopen-db"
    uses_python = True
    title = "MIOpen database and kernel cache on local, writable disk"
    source = kb.TUNING_DB

    def applies(self, host: Host) -> Optional[str]:
        torch = torch_info(host)
        if torch.build in ("cuda", "cpu"):
            return "torch does not use MIOpen (not a ROCm build)"
        reason = not_rocm_reason(host)
        if reason and torch.build != "rocm":
            return reason
        if not miopen_locations(host):
            return "HOME is not set and neither is MIOPEN_USER_DB_PATH"
        return None

    def run(self, host: Host) -> CheckResult:
        locations = miopen_locations(host)
        findings = [Finding.info(_line(loc)) for loc in locations]
        problems: list[str] = []
        status = Status.PASS
        for loc in locations:
            if loc.writable is False:
                problems.append(f"the {loc.what} folder is not writable ({loc.existing})")
                findings.append(Finding.error(f"{loc.existing} is not writable by this user: "
                                              f"MIOpen cannot keep its {loc.what} there"))
                status = Status.FAIL
            if loc.network and loc.fs is not None:
                problems.append(f"the {loc.what} is on {loc.fs.name}, a network file system")
                findings.append(Finding.error(self._network_text(loc, loc.fs)))
                status = max(status, Status.WARN, key=_rank)
            if loc.statfs is not None and loc.statfs.blocks and \
                    loc.statfs.free_bytes < kb.LOW_FREE_BYTES:
                problems.append(f"{_gib(loc.statfs.free_bytes)} free for the {loc.what}")
                findings.append(Finding.error(
                    f"{loc.existing} has {_gib(loc.statfs.free_bytes)} free (under "
                    f"{_gib(kb.LOW_FREE_BYTES)}): the {loc.what} may not grow"))
                status = max(status, Status.WARN, key=_rank)
        if not problems:
            where = "; ".join(f"{loc.what} on {loc.fs_name}" for loc in locations)
            return self.passed(f"MIOpen's {where}, writable", findings)
        base, local = local_folder(host)
        if local is not None and (local.network or local.writable is False):
            state = "not writable" if local.writable is False else f"on {local.fs_name}"
            findings.append(Finding.hint(f"{base} itself is {state}: use a node-local folder "
                                         "instead of it in the lines below"))
        fix = Fix(f"Move MIOpen's databases to node-local disk, one folder per user"
                  f"{' and job' if environment(host).get('SLURM_JOB_ID') else ''}, created before "
                  "training starts (in the job script or shell profile).", export_lines(host))
        return self.result(status, "; ".join(problems), findings, fix, source=kb.LOCAL_EXPORTS)

    @staticmethod
    def _network_text(loc: DbLocation, fs: filesystems.FileSystem) -> str:
        if fs.miopen_moves and not loc.from_variable:
            return (f"{loc.path} is on {fs.name}: MIOpen from 2023 on (ROCm/MIOpen PR #2092) "
                    "moves its user databases to the temp folder by itself here, older "
                    "releases and the ranks of other nodes share this one")
        if fs.miopen_moves:
            return (f"{loc.path} is on {fs.name}, set by ${loc.variable}: every rank and node "
                    "that shares it writes the same SQLite files")
        return (f"{loc.path} is on {fs.name}, which MIOpen does not recognise as a network "
                "file system (its list has NFS, SMB/CIFS, Lustre, Ceph, AFS, OCFS2, Coda): "
                "it keeps its SQLite files there for every rank and node")


def _rank(status: Status) -> int:
    return (Status.PASS, Status.WARN, Status.FAIL).index(status)
