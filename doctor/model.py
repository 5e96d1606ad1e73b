"""The check model: what a check is, and the frozen results it produces.

Data flows one way: Host -> checks -> CheckResult -> Report -> renderers. Checks compute and
never print; renderers are pure functions of a Report.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Optional

if TYPE_CHECKING:
    from rocmdoctor.host import Host


class Status(str, enum.Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


class Severity(str, enum.Enum):
    INFO = "info"
    HINT = "hint"
    ERROR = "error"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    text: str

    @classmethod
    def info(cls, text: str) -> Finding:
        return cls(Severity.INFO, text)

    @classmethod
    def hint(cls, text: str) -> Finding:
        return cls(Severity.HINT, text)

    @classmethod
    def error(cls, text: str) -> Finding:
        return cls(Severity.ERROR, text)


@dataclass(frozen=True)
class Fix:
    """What to do about a finding: the text, the exact commands, and what they need."""

    text: str
    commands: tuple[str, ...] = ()
    needs_root: bool = False
    needs_relogin: bool = False


@dataclass(frozen=True)
class Reference:
    """What a measured figure is judged against: a value, what it is, and its source."""

    value: float
    unit: str
    what: str  # "the MAMF of an NVIDIA H100 SXM, mamf-finder.py ..." or "datasheet peak"
    source: str  # URL


@dataclass(frozen=True)
class Figure:
    """One measured number of `check --deep`, with its unit, spread and reference."""

    key: str  # stable across runs and nodes: "gemm:bf16", "memory:copy", "host:h2d"
    name: str  # as printed: "bf16 GEMM 8192x8192x8192"
    value: Optional[float]
    unit: str
    gpu: Optional[int] = None
    spread_pct: Optional[float] = None  # (max - min) / median of the timed runs, in %
    runs: int = 0
    reference: Optional[Reference] = None
    ratio: Optional[float] = None  # value / reference.value
    verdict: Optional[str] = None  # pass, warn, fail; None: no reference, no verdict
    spec: Optional[Reference] = None  # the datasheet figure, shown beside the reference


@dataclass(frozen=True)
class CheckResult:
    id: str
    title: str
    status: Status
    summary: str
    findings: tuple[Finding, ...] = ()
    fix: Optional[Fix] = None
    source: Optional[str] = None
    duration_ms: int = 0
    depends: tuple[str, ...] = ()  # the checks this one needs (Check.depends)
    # For a check skipped because a prerequisite failed: the id of the failure at the root
    # of that chain (a check skipped for a skipped prerequisite names the same root).
    root_cause: Optional[str] = None
    figures: tuple[Figure, ...] = ()  # what a measured check measured (`check --deep`)


@dataclass(frozen=True)
class Report:
    """Everything one `rocmdoctor check` established, in registry order."""

    tool_version: str
    platform: str
    results: tuple[CheckResult, ...]

    def count(self, status: Status) -> int:
        return sum(1 for r in self.results if r.status is status)

    def summary(self) -> dict[str, int]:
        return {s.value: self.count(s) for s in Status}

    def exit_code(self, strict: bool = False) -> int:
        bad = {Status.FAIL, Status.ERROR} | ({Status.WARN} if strict else set())
        return 1 if any(r.status in bad for r in self.results) else 0


class Check(ABC):
    """One fact about the machine. Subclasses set `id` and `title` and implement `run`.

    `applies` returns None when the check applies here, or the reason it does not (the
    runner turns that into a `skip` result). Neither method may print or touch the machine
    except through `host`.
    """

    id: ClassVar[str]
    title: ClassVar[str]
    source: ClassVar[Optional[str]] = None
    # True when run() reads host.python(): the CLI then starts the probe at once.
    uses_python: ClassVar[bool] = False
    # True for a check that runs only when asked for (it takes seconds: `--collectives`).
    opt_in: ClassVar[bool] = False
    # "deep" for a measured check of `check --deep`, "stress" for `--stress` only.
    level: ClassVar[str] = "quick"
    # Seconds the runner waits for it, when it needs longer than the runner's default.
    deadline_s: ClassVar[Optional[float]] = None
    # Ids of the checks whose facts this one builds on. When one of them fails or errors, this
    # check is not run: it is skipped naming that prerequisite, so one root cause gives one
    # failure, not a cascade (as AMD's rocprofv3-doctor declares prerequisites). A skipped
    # prerequisite does not stop it: its own applies() decides.
    depends: ClassVar[tuple[str, ...]] = ()

    def applies(self, host: Host) -> Optional[str]:
        return None

    @abstractmethod
    def run(self, host: Host) -> CheckResult: ...

    def result(
        self,
        status: Status,
        summary: str,
        findings: tuple[Finding, ...] | list[Finding] = (),
        fix: Optional[Fix] = None,
        source: Optional[str] = None,
        figures: tuple[Figure, ...] | list[Figure] = (),
    ) -> CheckResult:
        return CheckResult(
            id=self.id,
            title=self.title,
            status=status,
            summary=summary,
            findings=tuple(findings),
            fix=fix,
            source=source if source is not None else self.source,
            depends=self.depends,
            figures=tuple(figures),
        )

    def passed(self, summary: str, findings: tuple[Finding, ...] | list[Finding] = (),
               source: Optional[str] = None) -> CheckResult:
        return self.result(Status.PASS, summary, findings, source=source)

    def skipped(self, summary: str) -> CheckResult:
        return self.result(Status.SKIP, summary)


@dataclass(frozen=True)
class RawSection:
    """A block of raw output the report shows as it is (rocminfo, the SMI, packages)."""

    title: str
    text: str


@dataclass(frozen=True)
class ReportFacts:
    """What `rocmdoctor report` shows beside the checks, gathered before rendering (read by
    rocmdoctor.facts.collect_env, drawn as rows by rocmdoctor.render.report_facts): the
    renderer sees these, never the machine."""

    header: tuple[tuple[str, str], ...]  # (label, value) rows of the environment table
    gpus: tuple[str, ...]  # one line per GPU
    collect_env: tuple[tuple[str, str], ...]  # the fields torch.utils.collect_env prints
    sections: tuple[RawSection, ...]  # rocminfo's summary and the SMI output
    env: tuple[tuple[str, str], ...]  # the GPU-related environment variables, unredacted
    packages: tuple[tuple[str, str], ...]  # Python packages and their versions


# How two GPUs are connected (rocmdoctor.facts.topology reads it; kb.links rates it).
NVLINK, XGMI, PCIE, SAME_BOARD, UNKNOWN = "nvlink", "xgmi", "pcie", "same-board", "unknown"


@dataclass(frozen=True)
class Link:
    """The connection between two GPUs, as the tool named it."""

    kind: str  # nvlink, xgmi, pcie, same-board, unknown
    label: str  # as printed: "NV18", "PIX", "SYS", "XGMI", "PCIE"
    count: Optional[int] = None  # NVLink links in the bond; AMD: the hop count
    weight: Optional[int] = None  # AMD only: the relative link weight (lower is closer)
