"""`rocmdoctor fleet summarize` and the `machine` object of `check --json`.

The fleet is made of real replays: the committed H200 snapshot, the machines test_report
builds from real captures (Radeon 890M, 4x MI300X, RX 7900 XTX without the render group),
and variations of the MI300X node (another torch build, a user who cannot open /dev/kfd).
Each node's report is made the way `check --json` makes it (checks, then machine facts).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmdoctor.checks.registry import all_checks
from rocmdoctor.facts.machine import machine_facts
from rocmdoctor.fleet import (
    STATUSES,
    FleetInputError,
    NodeReport,
    group_nodes,
    load_report,
    parse_report,
    summarize,
    unique_names,
)
from rocmdoctor.host.snapshot import SnapshotHost, load_snapshot
from rocmdoctor.render.check_json import render_json
from rocmdoctor.render.fleet import RENDERERS, hostlist
from rocmdoctor.render.machine import expand_output_pattern, machine_object
from rocmdoctor.runner import run_checks
from tests.golden import assert_golden
from tests.helpers import char_dev
from tests.test_report import MACHINES

GOLDEN = Path(__file__).parent / "golden" / "fleet"
H200 = Path(__file__).parent / "fixtures" / "h200-snapshot.json.gz"
MI300X = "mi300x-x4-rocm6.2"


def mi300x(hostname: str = "<redacted>", torch: Optional[str] = None,
           kfd_denied: bool = False) -> dict[str, Any]:
    """The 4x MI300X machine, under another name, torch build, or a user without /dev/kfd."""
    data = MACHINES[MI300X]()
    data["platform"]["hostname"] = hostname
    if torch is not None:
        data["python"]["torch"]["version"] = torch
        data["python"]["packages"]["torch"] = torch
    if kfd_denied:
        data["paths"]["/dev/kfd"] = char_dev(readable=False, writable=False)
        data["user"]["groups"] = ["alice", "sudo"]
    return data


def fleet_snapshots() -> dict[str, dict[str, Any]]:
    """node name -> snapshot: four MI300X nodes, a workstation, an MI100 container and an
    H200."""
    return {
        "mi300x-01": mi300x("mi300x-01.cluster.example.org"),
        "mi300x-02": mi300x("mi300x-02.cluster.example.org"),
        "mi300x-03": mi300x("mi300x-03.cluster.example.org", torch="2.4.1+rocm6.1"),
        "mi300x-04": mi300x("mi300x-04.cluster.example.org", kfd_denied=True),
        "ws-890m": MACHINES["gfx1150-890m-rocm7.2"](),
        "mi100-docker": MACHINES["mi100-x4-container-not-in-render-group"](),
        "h200-01": load_snapshot(str(H200)),
    }


def machine(host: SnapshotHost, platform: str, probe: bool = True) -> dict[str, Any]:
    """The `machine` object, read and drawn as `check --json` does."""
    return machine_object(machine_facts(host, platform, probe))


def check_json(snapshot: dict[str, Any]) -> str:
    """What `rocmdoctor check --from SNAPSHOT --json` prints."""
    host = SnapshotHost(snapshot)
    report = run_checks(host, all_checks())
    return render_json(report, machine(host, report.platform))


def write_reports(folder: Path) -> list[str]:
    """reports/<node>.json under folder, relative paths as a shell glob would give them."""
    (folder / "reports").mkdir(exist_ok=True)
    paths = []
    for name, snap in fleet_snapshots().items():
        (folder / "reports" / f"{name}.json").write_text(check_json(snap), encoding="utf-8")
        paths.append(f"reports/{name}.json")
    return sorted(paths)


def golden(name: str, text: str) -> None:
    assert_golden(GOLDEN / name, text)


# --- the machine object ------------------------------------------------------------------------

H200_MACHINE = {
    "node": "<redacted>", "os": "Ubuntu 24.04.3 LTS", "kernel": "6.18.44-fc-v657-gpu",
    "rocm": None, "amdgpu_driver": None, "nvidia_driver": "580.159.04", "python": "3.12.3",
    "torch": "2.11.0+cu130", "torch_build": "CUDA 13.0", "torchvision": "0.26.0",
    "gpus": ["sm_90 NVIDIA H200"],
}
MI300X_MACHINE = {
    "node": "mi300x-01", "os": "Ubuntu 22.04.5 LTS", "kernel": "5.15.0-116-generic",
    "rocm": "6.2.1", "amdgpu_driver": "inbox driver of kernel 5.15.0-116-generic",
    "nvidia_driver": None, "python": "3.9.19", "torch": "2.5.0a0+gitcedc116",
    "torch_build": "HIP 6.2.41133-dd7f95766", "torchvision": "0.19.1a0+6194369",
    "gpus": ["gfx942 AMD Instinct MI300X"] * 4,
}


def test_machine_facts_of_the_real_h200_replay() -> None:
    data = json.loads(check_json(load_snapshot(str(H200))))
    assert data["machine"] == H200_MACHINE


def test_machine_facts_of_an_mi300x_node_use_the_short_host_name() -> None:
    data = json.loads(check_json(mi300x("mi300x-01.cluster.example.org")))
    assert data["machine"] == MI300X_MACHINE
    assert list(data) == ["schema", "tool_version", "platform", "summary", "checks", "machine"]


class CommandLog(SnapshotHost):
    """A replay that remembers every command asked of it."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.commands: list[str] = []

    def run(self, argv: Any, timeout: Optional[float] = None) -> Any:
        self.commands.append(" ".join(argv))
        return super().run(argv, timeout)


def test_machine_facts_never_start_a_command_the_checks_did_not() -> None:
    """No check ran, so rocminfo and nvidia-smi are not run for the machine object either;
    the GPUs come from the torch probe instead."""
    host = CommandLog(mi300x())
    got = machine(host, "rocm")
    assert host.commands == []
    assert got == {**MI300X_MACHINE, "node": "<redacted>"}
    assert machine(host, "rocm", probe=False) == {
        **got, "python": None, "torch": None, "torch_build": None, "torchvision": None,
        "gpus": []}
    run_checks(host, all_checks())
    assert "rocminfo" in host.commands
    before = list(host.commands)
    assert machine(host, "rocm")["gpus"] == MI300X_MACHINE["gpus"]
    assert host.commands == before


class BrokenHost(SnapshotHost):
    def python(self) -> Optional[dict[str, Any]]:
        raise RuntimeError("the probe exploded")


def test_machine_facts_never_raise() -> None:
    got = machine(BrokenHost({"platform": {"hostname": "x.y"}, "python": 3}), "cpu")
    assert got == {"node": "x", "os": None, "kernel": None, "rocm": None,
                   "amdgpu_driver": None, "nvidia_driver": None, "python": None,
                   "torch": None, "torch_build": None, "torchvision": None, "gpus": []}
    weird = {"python": {"version": 3, "torch": {"imported": True, "devices": [None, 7]},
                        "packages": []}}
    assert machine(SnapshotHost(weird), "rocm")["torch_build"] == "CPU"


@pytest.mark.parametrize(("pattern", "env", "expected"), [
    ("reports/%N.json", {"SLURMD_NODENAME": "gpu-a17"}, "reports/gpu-a17.json"),
    ("reports/%N.json", {}, "reports/login1.json"),
    ("%h-%N-100%%.json", {"SLURMD_NODENAME": "n7"}, "login1-n7-100%.json"),
    ("plain.json", {"SLURMD_NODENAME": "n7"}, "plain.json"),
])
def test_output_patterns(pattern: str, env: dict[str, str], expected: str) -> None:
    assert expand_output_pattern(pattern, env, "login1.cluster.example.org") == expected


@pytest.mark.parametrize(("pattern", "message"), [
    ("r/%j.json", "--output 'r/%j.json': unknown pattern %j (rocmdoctor expands %N, %h and %%)"),
    ("r/100%", "--output 'r/100%': unknown pattern a trailing % (rocmdoctor expands %N, %h "
               "and %%)"),
])
def test_unknown_output_patterns_are_refused(pattern: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        expand_output_pattern(pattern, {}, "h")
    assert str(info.value) == message


@given(st.text(), st.text(), st.text())
def test_output_pattern_fuzz(pattern: str, node: str, host: str) -> None:
    try:
        out = expand_output_pattern(pattern, {"SLURMD_NODENAME": node}, host)
    except ValueError:
        assert "%" in pattern
    else:
        assert out == pattern or "%" in pattern


# --- the whole fleet, golden -----------------------------------------------------------------

@pytest.mark.parametrize(("fmt", "name"), [("text", "fleet.txt"), ("markdown", "fleet.md"),
                                           ("json", "fleet.json")])
def test_golden_fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str,
                      name: str) -> None:
    monkeypatch.chdir(tmp_path)
    fleet = summarize(load_report(p) for p in write_reports(tmp_path))
    golden(name, RENDERERS[fmt](fleet))
    assert fleet.exit_code == 1
    if fmt == "json":
        assert json.loads(RENDERERS[fmt](fleet))["schema"] == "rocmdoctor.fleet/1"


def test_the_fleet_finds_the_odd_ones_and_deduplicates_fixes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    fleet = summarize(load_report(p) for p in write_reports(tmp_path))
    assert fleet.groups[0].nodes == ("mi300x-01", "mi300x-02", "mi300x-04")
    odd = {g.nodes: g.differs for g in fleet.groups[1:]}
    assert odd[("mi300x-03",)] == (("torch", "2.4.1+rocm6.1", "2.5.0a0+gitcedc116"),)
    alloc = next(p for p in fleet.problems if p.id == "allocator-config")
    assert alloc.nodes == ("mi300x-01", "mi300x-02", "mi300x-03", "mi300x-04")
    assert [nodes for _, nodes in alloc.fixes] == [alloc.nodes]  # one fix, four nodes
    # Two different fixes: the container's group id (the container check fails there, and
    # kfd-access, which depends on it, is not run), the host user's group membership.
    kfd = next(p for p in fleet.problems if p.id == "kfd-access")
    assert kfd.nodes == ("mi300x-04",)
    assert [(f.text, f.commands, n) for f, n in kfd.fixes] == [
        ("Add your user to the render and video groups, then log in again.",
         ("sudo usermod -aG render,video $USER",), ("mi300x-04",))]
    container = next(p for p in fleet.problems if p.id == "container")
    assert [(f.text.split(":")[0], n) for f, n in container.fixes] == [
        ("Start the container with --group-add 993", ("mi100-docker",))]


# --- units ---------------------------------------------------------------------------------------

def report(name: str, statuses: dict[str, str], **machine: Any) -> dict[str, Any]:
    return {"schema": "rocmdoctor.check/1", "platform": "rocm", "machine": {"node": name,
                                                                            **machine},
            "checks": [{"id": k, "title": k, "status": v, "summary": f"{k} {v}", "fix": None}
                       for k, v in statuses.items()]}


def node(name: str, torch: str = "2.5.1", gpus: tuple[str, ...] = ("gfx942 MI300X",),
         statuses: Optional[dict[str, str]] = None) -> NodeReport:
    return parse_report(report(name, statuses or {"os-release": "pass"}, torch=torch,
                               gpus=list(gpus)), f"{name}.json")


def test_groups_largest_first_then_by_name_with_what_differs() -> None:
    nodes = [node("n3", torch="2.4"), node("n1"), node("n10"), node("n2", gpus=("gfx90a",)),
             node("n4", torch="2.4")]
    groups = group_nodes(unique_names(nodes))
    assert [g.nodes for g in groups] == [("n1", "n10"), ("n3", "n4"), ("n2",)]
    assert groups[0].differs == ()
    assert groups[1].differs == (("torch", "2.4", "2.5.1"),)
    assert groups[2].differs == (("gpus", ("gfx90a",), ("gfx942 MI300X",)),)


def test_a_tie_for_largest_is_called_the_reference_group() -> None:
    fleet = summarize([node("a"), node("b", torch="2.4")])
    assert "[1] reference group, 1 node (a)" in RENDERERS["text"](fleet)
    assert "torch 2.4 (reference group: 2.5.1)" in RENDERERS["text"](fleet)


def test_names_come_from_the_machine_else_the_file_and_stay_unique() -> None:
    redacted = parse_report(report("<redacted>", {"os-release": "pass"}), "r/node07.json")
    nameless = parse_report({**report("x", {}), "machine": None}, "r/node08.json")
    twin_a = parse_report(report("gpu", {}), "a/left.json")
    twin_b = parse_report(report("gpu", {}), "b/right.json")
    same_a = parse_report(report("gpu2", {}), "a/n.json")
    same_b = parse_report(report("gpu2", {}), "b/n.json")
    names = [n.name for n in unique_names([redacted, nameless, twin_a, twin_b, same_a,
                                           same_b])]
    assert names == ["gpu2", "gpu2#2", "left", "node07", "node08", "right"]


def test_table_columns_leave_out_checks_skipped_everywhere() -> None:
    fleet = summarize([node("a", statuses={"os-release": "pass", "nvidia-driver": "skip"}),
                       node("b", statuses={"os-release": "warn", "kfd-access": "error"})])
    assert fleet.columns == ("os-release", "kfd-access")
    text = RENDERERS["text"](fleet)
    assert "  a      ✓  ·\n  b      !  E\n" in text
    assert fleet.exit_code == 1
    assert summarize([node("c", statuses={"os-release": "warn"})]).exit_code == 0


def test_hostlist() -> None:
    assert hostlist(["node01", "node02", "node03", "node07", "gpu9", "gpu10", "login"]) == (
        "gpu[9-10], login, node[01-03,07]")
    assert hostlist(["node1", "node01"]) == "node01, node1"


@given(st.lists(st.text(max_size=12), max_size=8))
def test_hostlist_fuzz(names: list[str]) -> None:
    hostlist(names)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=20)
CHECK = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "kfd-access"]) | JSON,
     "status": st.sampled_from(STATUSES) | JSON},
    optional={"title": JSON, "summary": JSON,
              "fix": st.none() | st.fixed_dictionaries({}, optional={
                  "text": JSON, "commands": JSON, "needs_root": JSON, "needs_relogin": JSON})})
REPORT = st.fixed_dictionaries(
    {"schema": st.just("rocmdoctor.check/1") | JSON, "checks": st.lists(CHECK, max_size=4) | JSON},
    optional={"platform": JSON, "machine": st.dictionaries(
        st.sampled_from(["node", "torch", "rocm", "gpus", "os"]) | st.text(max_size=4),
        JSON | st.lists(st.text(max_size=6), max_size=3), max_size=5) | JSON})


@settings(max_examples=300)
@given(st.lists(JSON | REPORT, min_size=1, max_size=4))
def test_arbitrary_json_never_raises(documents: list[Any]) -> None:
    nodes = []
    for i, doc in enumerate(documents):
        try:
            nodes.append(parse_report(doc, f"r/{i}.json"))
        except FleetInputError as exc:
            assert str(exc).startswith(f"r/{i}.json: ") and "\n" not in str(exc)
    fleet = summarize(nodes, [("bad.json", "not JSON")])
    for render in RENDERERS.values():
        render(fleet)
    json.loads(RENDERERS["json"](fleet))
    assert fleet.exit_code == (1 if any(n.failed for n in nodes) else 0)


# --- the command line ----------------------------------------------------------------------------

def rocmdoctor(*args: str, cwd: Path, env: Optional[dict[str, str]] = None
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocmdoctor", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})


@pytest.mark.e2e
def test_cli_summarize_matches_the_golden_text(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    paths = write_reports(tmp_path)
    r = rocmdoctor("fleet", "summarize", *paths, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (1, "")
    assert r.stdout == (GOLDEN / "fleet.txt").read_text(encoding="utf-8")
    r = rocmdoctor("fleet", "summarize", *paths, "--format", "markdown", "-o", "f.md",
                   cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "")
    assert (tmp_path / "f.md").read_text() == (GOLDEN / "fleet.md").read_text(encoding="utf-8")


@pytest.mark.e2e
def test_cli_bad_files_are_one_line_each_and_the_rest_goes_on(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(check_json(load_snapshot(str(H200))))
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "other.json").write_text('{"schema": "rocmdoctor.report/1"}')
    (tmp_path / "snap.json").write_text('{"format": "rocmdoctor-snapshot/1"}')
    (tmp_path / "badcheck.json").write_text(
        '{"schema": "rocmdoctor.check/1", "checks": [{"id": 3, "status": "pass"}]}')
    (tmp_path / "dir.json").mkdir()
    bad = ["empty.json", "garbage.json", "binary.json", "list.json", "other.json", "snap.json",
           "badcheck.json", "dir.json", "missing.json"]
    r = rocmdoctor("fleet", "summarize", "good.json", *bad, cwd=tmp_path)
    assert r.returncode == 0  # the H200 has no failed check
    assert r.stderr.splitlines() == [
        "rocmdoctor: skipped empty.json: empty (did `rocmdoctor check --json` run there?)",
        "rocmdoctor: skipped garbage.json: not JSON (Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1))",
        "rocmdoctor: skipped binary.json: not JSON ('utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte)",
        "rocmdoctor: skipped list.json: not a rocmdoctor check report (not a JSON object)",
        "rocmdoctor: skipped other.json: schema 'rocmdoctor.report/1', expected "
        "'rocmdoctor.check/1' (write it with: rocmdoctor check --json)",
        "rocmdoctor: skipped snap.json: a snapshot, not a check report (turn it into one "
        "with: rocmdoctor check --from snap.json --json)",
        "rocmdoctor: skipped badcheck.json: checks[0] has no id or no known status",
        "rocmdoctor: skipped dir.json: cannot read it (Is a directory)",
        "rocmdoctor: skipped missing.json: no such file",
    ]
    assert "1 node, 1 version group; 0 with failures, 0 with warnings only, 1 clean; " \
           "9 files unusable\n" in r.stdout
    assert "Unusable files\n  empty.json: empty" in r.stdout
    r = rocmdoctor("fleet", "summarize", *bad, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines()[-1] == "rocmdoctor: error: no usable report among 9 file(s)"
    assert len(r.stderr.splitlines()) == 10 and "Traceback" not in r.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(("args", "message"), [
    (["--format", "pdf"], "rocmdoctor: error: unknown --format 'pdf' (choose text, markdown "
                          "or json)\n"),
    (["-o", "nowhere/f.txt"], "rocmdoctor: error: cannot write nowhere/f.txt: No such file or "
                              "directory\n"),
])
def test_cli_bad_usage_is_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "good.json").write_text(check_json(load_snapshot(str(H200))))
    r = rocmdoctor("fleet", "summarize", "good.json", *args, cwd=tmp_path)
    assert (r.returncode, r.stderr) == (2, message)


@pytest.mark.e2e
def test_check_json_carries_the_machine_and_o_expands_node_names(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    env = {"SLURMD_NODENAME": "gpu-a17"}
    r = rocmdoctor("check", "--from", str(H200), "--json", "-o", "out/%N.json", cwd=tmp_path,
                   env=env)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert json.loads((tmp_path / "out" / "gpu-a17.json").read_text())["machine"] == H200_MACHINE
    r = rocmdoctor("check", "--from", str(H200), "-o", "out/%h-100%%.txt", cwd=tmp_path)
    short = platform.node().split(".")[0]
    assert r.returncode == 0 and (tmp_path / "out" / f"{short}-100%.txt").is_file()


@pytest.mark.e2e
@pytest.mark.parametrize(("output", "message"), [
    ("out/%j.json", "rocmdoctor: error: --output 'out/%j.json': unknown pattern %j (rocmdoctor "
                    "expands %N, %h and %%)\n"),
    ("missing/%N.json", "rocmdoctor: error: cannot write missing/gpu-a17.json: No such file or "
                        "directory\n"),
])
def test_check_output_errors_are_one_line_exit_2(tmp_path: Path, output: str,
                                                 message: str) -> None:
    r = rocmdoctor("check", "--from", str(H200), "--json", "-o", output, cwd=tmp_path,
                   env={"SLURMD_NODENAME": "gpu-a17"})
    assert (r.returncode, r.stdout, r.stderr) == (2, "", message)
    assert not (tmp_path / "missing").exists()


def test_lone_surrogates_and_odd_file_names_still_render_as_utf8() -> None:
    doc = report("n\ud800", {"os-release": "fail"})
    doc["checks"][0]["summary"] = "bad \udcff byte"
    fleet = summarize([parse_report(doc, "r/x\udcff.json")], [("r/y\udcfe.json", "empty")])
    for render in RENDERERS.values():
        render(fleet).encode("utf-8")
    with pytest.raises(FleetInputError) as info:
        load_report("r/missing\udcff.json")
    assert (info.value.file, info.value.reason) == ("r/missing?.json", "no such file")
