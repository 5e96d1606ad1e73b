"""The deep child's result (schema rocmdoctor.deep/1) as typed values, read in one place.

Every field is type-checked here: a recorded run with a missing or wrong-typed field gives
None for that figure, never a crashed check (a hypothesis test feeds it arbitrary JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if value == value and abs(value) != float("inf") else None


def _int(value: Any) -> Optional[int]:
    n = num(value)
    return int(n) if n is not None and n == int(n) else None


def _numbers(value: Any) -> dict[str, float]:
    """The entries of a mapping whose values are numbers."""
    out: dict[str, float] = {}
    for key, raw in _map(value).items():
        number = num(raw)
        if number is not None:
            out[str(key)] = number
    return out


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Rate:
    """Per-run rates of one measurement: median, range, how many runs."""

    median: float
    unit: str
    min: Optional[float] = None
    max: Optional[float] = None
    spread_pct: Optional[float] = None
    runs: int = 0

    @classmethod
    def parse(cls, value: Any, unit: str) -> Optional[Rate]:
        d = _map(value)
        median = num(d.get("median"))
        if median is None or median <= 0:
            return None
        return cls(median, _text(d.get("unit")) or unit, num(d.get("min")), num(d.get("max")),
                   num(d.get("spread_pct")), _int(d.get("n")) or 0)


@dataclass(frozen=True)
class Gemm:
    dtype: str
    size: Optional[int]  # N
    library: Optional[str]  # None: the one torch prefers; else the one asked for
    library_name: Optional[str]
    rate: Optional[Rate]
    m: Optional[int] = None
    k: Optional[int] = None
    # Measured at a class reference's shape (deep_kernels.REFERENCE_SHAPES), not n x n x n;
    # `left_out`: why it was not measured (too slow for this card).
    reference_shape: bool = False
    left_out: Optional[str] = None

    @property
    def shape(self) -> tuple[Optional[int], Optional[int], Optional[int]]:
        return (self.m if self.m is not None else self.size, self.size,
                self.k if self.k is not None else self.size)

    @property
    def shape_text(self) -> str:
        return "x".join(str(d) for d in self.shape)


@dataclass(frozen=True)
class Conv:
    dtype: str
    layout: str
    shape: Mapping[str, int]
    first_call_s: Optional[float]
    rate: Optional[Rate]
    gemm_equivalent: Optional[Rate]


@dataclass(frozen=True)
class Load:
    """Telemetry during one phase (the sustained GEMM, the stress loop)."""

    samples: int = 0
    clock_median: Optional[float] = None
    clock_p95: Optional[float] = None
    clock_min: Optional[float] = None
    power_median: Optional[float] = None
    power_max: Optional[float] = None
    temp_max: Optional[float] = None
    reasons: Optional[Mapping[str, float]] = None  # reason -> share of samples it was on

    @classmethod
    def parse(cls, value: Any) -> Load:
        d = _map(value)
        clock, power, temp = _map(d.get("clock_mhz")), _map(d.get("power_w")), _map(
            d.get("temperature_c"))
        reasons = d.get("reasons")
        return cls(_int(d.get("samples")) or 0, num(clock.get("median")), num(clock.get("p95")),
                   num(clock.get("min")), num(power.get("median")), num(power.get("max")),
                   num(temp.get("max")),
                   _numbers(reasons) if isinstance(reasons, Mapping) else None)


@dataclass(frozen=True)
class Telemetry:
    source: str
    unavailable: tuple[str, ...]
    max_clock_mhz: Optional[float]
    power_limit_w: Optional[float]
    default_power_limit_w: Optional[float]
    slowdown_temp_c: Optional[float]
    perf_level: Optional[str]
    under_load: Load
    stress: Optional[Load]

    @classmethod
    def parse(cls, value: Any) -> Telemetry:
        d = _map(value)
        static = _map(d.get("static"))
        return cls(_text(d.get("source")) or "none",
                   tuple(str(x) for x in _list(d.get("unavailable"))),
                   num(static.get("max_clock_mhz")), num(static.get("power_limit_w")),
                   num(static.get("default_power_limit_w")), num(static.get("slowdown_temp_c")),
                   _text(static.get("perf_level")), Load.parse(d.get("under_load")),
                   Load.parse(d["stress"]) if isinstance(d.get("stress"), Mapping) else None)


@dataclass(frozen=True)
class Counters:
    ecc_uncorrected: Optional[int] = None
    ecc_corrected: Optional[int] = None
    pcie_replays: Optional[int] = None
    links: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    xgmi_error: Optional[str] = None

    @classmethod
    def parse(cls, value: Any) -> Counters:
        d = _map(value)
        links = {str(k): {c: int(n) for c, n in _numbers(v).items()}
                 for k, v in _map(d.get("links")).items()}
        return cls(_int(d.get("ecc_uncorrected")), _int(d.get("ecc_corrected")),
                   _int(d.get("pcie_replays")), links, _text(d.get("xgmi_error")))


@dataclass(frozen=True)
class Stress:
    seconds: float
    windows: tuple[tuple[float, Optional[float], Optional[float]], ...]  # (t, TFLOP/s, GB/s)
    checked_tiles: int
    mismatches: int
    nonfinite: int
    first_bad: Mapping[str, Any]
    stopped_early: bool

    @classmethod
    def parse(cls, value: Any) -> Optional[Stress]:
        d = _map(value)
        if not d:
            return None
        windows = tuple((num(w.get("t")) or 0.0, num(w.get("tflops")), num(w.get("gbs")))
                        for w in _list(d.get("windows")) if isinstance(w, Mapping))
        return cls(num(d.get("seconds")) or 0.0, windows, _int(d.get("checked_tiles")) or 0,
                   _int(d.get("mismatches")) or 0, _int(d.get("nonfinite")) or 0,
                   _map(d.get("first_bad")), d.get("stopped_early") is True)


@dataclass(frozen=True)
class NumaCopy:
    node: int
    h2d: Optional[Rate]
    d2h: Optional[Rate]


@dataclass(frozen=True)
class GpuDeep:
    index: int
    name: str
    arch: str
    vendor: str
    bus_id: Optional[str]
    numa_node: Optional[int]
    uuid: Optional[str]
    timer: str
    gemm: tuple[Gemm, ...]
    conv: tuple[Conv, ...]
    conv_library: Optional[str]
    copy: Optional[Rate]
    triad: Optional[Rate]
    memory_bytes: Optional[int]
    h2d: Optional[Rate]
    d2h: Optional[Rate]
    pinned: bool
    numa: tuple[NumaCopy, ...]
    process_nodes: tuple[int, ...]
    launch_queued: Optional[Rate]
    launch_waited: Optional[Rate]
    telemetry: Telemetry
    before: Counters
    after: Counters
    stress: Optional[Stress]
    errors: Mapping[str, str]

    @property
    def label(self) -> str:
        return f"GPU {self.index} {self.name}"

    def gemm_of(self, dtype: str, library: Optional[str] = None) -> Optional[Gemm]:
        """The n x n x n product in `dtype` through `library` (None: torch's choice)."""
        return next((g for g in self.gemm if g.dtype == dtype and g.library == library
                     and not g.reference_shape), None)

    def gemm_at(self, dtype: str, shape: tuple[int, int, int]) -> Optional[Gemm]:
        """The product in `dtype` at a reference's (M, N, K), measured or left out."""
        return next((g for g in self.gemm if g.dtype == dtype and g.reference_shape
                     and g.library is None and g.shape == shape), None)


def _gemm(value: Any) -> Optional[Gemm]:
    d = _map(value)
    dtype = _text(d.get("dtype"))
    if dtype is None:
        return None
    return Gemm(dtype, _int(d.get("n")), _text(d.get("library")), _text(d.get("library_name")),
                Rate.parse(d.get("tflops"), "TFLOP/s"), _int(d.get("m")), _int(d.get("k")),
                d.get("reference_shape") is True, _text(d.get("left_out")))


def _conv(value: Any) -> Optional[Conv]:
    d = _map(value)
    dtype = _text(d.get("dtype"))
    if dtype is None:
        return None
    shape = {k: int(n) for k, n in _numbers(d.get("shape")).items()}
    return Conv(dtype, _text(d.get("layout")) or "?", shape, num(d.get("first_call_s")),
                Rate.parse(d.get("tflops"), "TFLOP/s"),
                Rate.parse(_map(d.get("gemm_equivalent")).get("tflops"), "TFLOP/s"))


def parse_gpu(value: Any, position: int) -> GpuDeep:
    d = _map(value)
    memory, host, launch = _map(d.get("memory")), _map(d.get("host_link")), _map(d.get("launch"))
    counters = _map(d.get("counters"))
    numa = []
    for entry in _list(host.get("numa")):
        node = _int(_map(entry).get("node"))
        if node is not None:
            numa.append(NumaCopy(node, Rate.parse(_map(entry).get("h2d"), "GB/s"),
                                 Rate.parse(_map(entry).get("d2h"), "GB/s")))
    index = _int(d.get("index"))
    return GpuDeep(
        index=position if index is None else index,
        name=_text(d.get("name")) or "GPU", arch=_text(d.get("arch")) or "?",
        vendor=_text(d.get("vendor")) or "?", bus_id=_text(d.get("bus_id")),
        numa_node=_int(d.get("numa_node")), uuid=_text(d.get("uuid")),
        timer=_text(d.get("timer")) or "?",
        gemm=tuple(g for g in map(_gemm, _list(d.get("gemm"))) if g is not None),
        conv=tuple(c for c in map(_conv, _list(d.get("conv"))) if c is not None),
        conv_library=_text(_map(d.get("conv_settings")).get("library")),
        copy=Rate.parse(memory.get("copy"), "GB/s"), triad=Rate.parse(memory.get("triad"), "GB/s"),
        memory_bytes=_int(memory.get("bytes")),
        h2d=Rate.parse(host.get("h2d"), "GB/s"), d2h=Rate.parse(host.get("d2h"), "GB/s"),
        pinned=host.get("pinned") is True, numa=tuple(numa),
        process_nodes=tuple(n for n in (_int(x) for x in _list(host.get("process_nodes")))
                            if n is not None),
        launch_queued=Rate.parse(launch.get("queued_us"), "us"),
        launch_waited=Rate.parse(launch.get("waited_us"), "us"),
        telemetry=Telemetry.parse(d.get("telemetry")),
        before=Counters.parse(counters.get("before")), after=Counters.parse(counters.get("after")),
        stress=Stress.parse(d.get("stress")),
        errors={str(k): str(v) for k, v in _map(d.get("errors")).items()})


@dataclass(frozen=True)
class Peer:
    src: int
    dst: int
    access: bool
    rate: Optional[Rate]


def parse_peers(value: Any) -> tuple[Peer, ...]:
    out = []
    for p in _list(value):
        d = _map(p)
        src, dst = _int(d.get("src")), _int(d.get("dst"))
        if src is not None and dst is not None:
            out.append(Peer(src, dst, d.get("access") is True, Rate.parse(d.get("gbs"), "GB/s")))
    return tuple(out)
