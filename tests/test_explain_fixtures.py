"""Every pasted error text in tests/fixtures/real/errors/ replayed through `explain`: the
entries, their cause and check, and the key fix command each header expects (see
tests/explain_replay.py for the header lines); unrelated tracebacks get no GPU advice. Then the
catalogue's own rules, the wrong matches it must not make, secrets, and exit codes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Optional

import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rocmdoctor import explain as explain_module
from rocmdoctor.checks.registry import all_checks
from rocmdoctor.cli.explain import NOTHING, explain_command
from rocmdoctor.explain import NOT_GPU, RECOGNIZED, UNKNOWN_GPU, diagnose, explain_text, redact
from rocmdoctor.explain.context import CONDITIONS
from rocmdoctor.host.snapshot import SnapshotHost, save_snapshot
from rocmdoctor.kb.errors import KNOWN_MESSAGES
from rocmdoctor.kb.messages import KnownMessage
from tests.explain_replay import Case, cases, host_for, replay
from tests.helpers import fixture_header, fixture_text

ENTRY = {m.key: m for m in KNOWN_MESSAGES}
CASES = cases()


# --- the fixtures ---------------------------------------------------------------------------


# Texts measured but never tuned on (scripts/explain_score.py --split fresh, test-3, test-4,
# fresh-5, fresh-6, fresh-7, fresh-8)
# must never get a confidently wrong answer; they need not be right (docs/explain.md gives the
# figures). A text whose header records a known miss (`# known-miss: key (confidence), ... |
# why`) must get exactly that answer, so a change to it is seen.
MEASURED = ("fresh", "test-3", "test-4", "fresh-5", "fresh-6", "fresh-7", "fresh-8",
            "fresh-9", "fresh-10", "fresh-11", "fresh-12", "fresh-13")


def known_miss(c: Case) -> Optional[str]:
    for line in fixture_header("errors/" + c.name).splitlines():
        if line.startswith("# known-miss:"):
            return line.partition(":")[2].partition("|")[0].strip()
    return None


def split_of(c: Case) -> str:
    for line in fixture_header("errors/" + c.name).splitlines():
        if line.startswith("# split:"):
            return line.partition(":")[2].strip()
    return ""


def test_there_are_enough_real_texts() -> None:
    assert len(CASES) >= 300
    assert sum(not c.gpu_related for c in CASES) >= 15
    assert all(c.expect for c in CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_fixture_gets_the_expected_answer(c: Case) -> None:
    result = replay(c)
    recorded = known_miss(c)
    if recorded is not None:
        said = ", ".join(f"{e.key} ({e.confidence})" for e in result.explanations)
        assert said == recorded
        return
    if split_of(c) in MEASURED:
        wrong = [e.key for e in result.explanations
                 if e.key not in c.expect and e.confidence == "likely"]
        assert wrong == [], f"confidently wrong: {wrong}"
        return
    if c.expect == ("none",):
        assert (result.verdict, result.explanations) == (NOT_GPU, [])
        return
    if c.expect == ("unknown",):
        assert (result.verdict, result.explanations) == (UNKNOWN_GPU, [])
        assert result.error_line
        return
    assert result.verdict == RECOGNIZED
    assert [e.key for e in result.explanations] == list(c.expect)
    for e in result.explanations:
        entry = ENTRY[e.key]
        assert (e.cause, e.check, e.source) == (entry.cause, entry.check, entry.source)
        assert e.matched and e.fix.text
    first = result.explanations[0]
    said = "\n".join((first.fix.text, *first.fix.commands, *first.notes))
    assert c.fix and c.fix in said, said


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_text_alone_tells_gpu_errors_from_unrelated_ones(c: Case) -> None:
    result = diagnose(fixture_text("errors/" + c.name))
    if c.gpu_related and split_of(c) in MEASURED:
        pytest.skip("measured, never tuned on: scripts/explain_score.py --split counts it")
    if c.gpu_related:
        assert result.verdict in (RECOGNIZED, UNKNOWN_GPU)
    else:
        assert (result.verdict, result.explanations) == (NOT_GPU, [])


# --- the catalogue --------------------------------------------------------------------------


def test_catalogue_size_and_shape() -> None:
    keys = [m.key for m in KNOWN_MESSAGES]
    assert len(keys) >= 100 and len(set(keys)) == len(keys)
    checks = {c.id for c in all_checks(opt_in=True)}
    for m in KNOWN_MESSAGES:
        assert m.source.startswith("https://"), m.key
        assert m.check is None or m.check in checks, (m.key, m.check)
        assert m.patterns and m.cause and m.fix, m.key
        for pattern in (*m.patterns, *m.unless, *m.unless_text):
            re.compile(pattern)
        for other in m.yields_to:
            assert other == "*" or other in keys, (m.key, other)
        assert all(r in CONDITIONS for r in m.requires), m.key


def test_catalogue_is_ranked_by_what_trackers_show() -> None:
    counted = [m for m in KNOWN_MESSAGES if m.threads]
    assert len(counted) >= 60
    assert max(m.threads for m in counted) == 30


# --- the wrong matches of the old catalogue ---------------------------------------------------

NVIDIA_HOST = host_for("nvidia")
NO_BINARY = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"


def test_no_binary_on_an_nvidia_machine_is_a_rocm_torch_there() -> None:
    [e] = explain_text(NO_BINARY, NVIDIA_HOST)
    assert e.key == "rocm-on-nvidia"
    assert e.fix.commands == ("pip install --force-reinstall torch torchvision --index-url "
                              "https://download.pytorch.org/whl/cu128",)
    assert [x.key for x in explain_text(NO_BINARY, host_for("amd"))] == ["no-binary-for-gpu"]


def test_memory_access_fault_with_a_leftover_override() -> None:
    text = "Memory access fault by GPU node-2 on address (nil). Reason: unknown"
    override = host_for("amd", {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    [e] = explain_text(text, override)
    assert e.key == "memory-access-fault-override" and e.check == "gfx-override"
    assert "unset HSA_OVERRIDE_GFX_VERSION" in e.fix.commands
    assert [x.key for x in explain_text(text, host_for("amd"))] == ["memory-access-fault"]
    said = "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n" + text
    assert [x.key for x in explain_text(said)] == ["memory-access-fault-override"]


@pytest.mark.parametrize(("errno", "key"), [("Cannot allocate memory", "kfd-enomem"),
                                            ("Operation not permitted", "kfd-eperm"),
                                            ("Permission denied", "kfd-permission"),
                                            ("Invalid argument", "kfd-open")])
def test_each_kfd_errno_has_its_own_answer(errno: str, key: str) -> None:
    assert [e.key for e in explain_text(f"Unable to open /dev/kfd read-write: {errno}")] == [key]


def test_the_harmless_miopen_system_db_warning() -> None:
    warning = ("MIOpen(HIP): Warning [SQLiteBase] Unable to read system database file:/opt/rocm/"
               "miopen/share/miopen/db/gfx900_64.kdb Performance may degrade")
    [alone] = explain_text(warning)
    assert (alone.key, alone.kind) == ("miopen-system-db-warning", "harmless")
    text = warning + "\nMIOpen Error: /MIOpen/src/hipoc/hipoc_program.cpp:286: Code object build failed."
    assert [e.key for e in explain_text(text)] == ["miopen-comgr-isa"]


def test_rccl_advice_lines_are_not_an_nccl_error() -> None:
    advice = ('g1:1:1 [0] init.cpp:122 NCCL WARN Missing "iommu=pt" from kernel command line '
              "which can lead to system instablity or hang!")
    assert [e.key for e in explain_text(advice)] == ["rccl-setup-advice"]
    failure = advice + "\nTest NCCL failure common.cu:1285 'internal error - please report this issue to the NCCL developers'"
    assert [e.key for e in explain_text(failure)] == ["nccl-internal-error"]


def test_rock_not_loaded_where_lsmod_is_missing() -> None:
    text = "sh: 1: lsmod: not found\nROCk module is NOT loaded, possibly no GPU devices"
    assert [e.key for e in explain_text(text)] == ["container-no-lsmod"]
    assert [e.key for e in explain_text(text.splitlines()[1])] == ["rock-not-loaded"]


# --- reading a traceback as a whole -------------------------------------------------------------


def test_the_root_line_wins_over_what_follows() -> None:
    text = fixture_text("errors/kfd-unsupported-gpu--pitcairn-not-supported-in-kfd.txt")
    assert "Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES" in text
    assert [e.key for e in explain_text(text)] == ["kfd-unsupported-gpu"]


def test_two_independent_causes_give_two_answers() -> None:
    text = ("export HSA_OVERRIDE_GFX_VERSION=gfx1102\n"
            'msg="amdgpu is not supported (supported types:[])" gpu_type=gfx1102\n'
            "RuntimeError: operator torchvision::nms does not exist")
    assert [e.key for e in explain_text(text)] == [
        "gfx-override-format", "ollama-amdgpu-not-supported", "torchvision-nms"]


def test_an_explain_only_kernel_entry_steps_aside_for_the_kernel_catalogue(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ring = ENTRY["amdgpu-ring-timeout"]
    twin = KnownMessage("ring-twin", ring.title, "kernel-log", ring.patterns, ring.cause,
                        ring.fix, ring.check, ring.source)
    monkeypatch.setattr(explain_module, "KNOWN_MESSAGES", (*KNOWN_MESSAGES, twin))
    monkeypatch.setattr(explain_module, "KERNEL_FALLBACK_KEYS", frozenset({"ring-twin"}))
    text = "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled seq=1"
    assert [e.key for e in explain_text(text)] == ["amdgpu-ring-timeout"]


# --- environments ---------------------------------------------------------------------------


def test_the_container_fix_inside_a_container() -> None:
    text = "Unable to open /dev/kfd read-write: Permission denied"
    [host] = explain_text(text, host_for("amd"))
    [inside] = explain_text(text, host_for("amd-container"))
    assert host.environment == "host"
    assert host.fix.commands == ("sudo usermod -aG render,video $USER",)
    assert inside.environment == "container"
    assert inside.fix.text == ENTRY["kfd-permission"].container_fix
    assert any("--group-add" in c for c in inside.fix.commands)
    assert inside.notes[0] == "This runs in a container (/.dockerenv exists): the fix is the container's."


def test_the_wsl_fix_under_wsl() -> None:
    text = "OSError: libcuda.so: cannot open shared object file: No such file or directory"
    [e] = explain_text(text, host_for("nvidia-wsl"))
    assert e.environment == "wsl"
    assert e.fix.commands[0] == "export LD_LIBRARY_PATH=/usr/lib/wsl/lib:$LD_LIBRARY_PATH"
    [plain] = explain_text(text)
    assert plain.environment == "host" and plain.fix.text == ENTRY["libcuda-missing"].fix


# --- secrets --------------------------------------------------------------------------------

SECRETS = [
    ("RuntimeError: No HIP GPUs are available HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456",
     "hf_abcdefghijklmnopqrstuvwxyz123456"),
    ("pip install --index-url https://alice:s3cretpass@pypi.example.com/simple torch; "
     "Torch not compiled with CUDA enabled", "s3cretpass"),
    ("No HIP GPUs are available (started with --password hunter2x)", "hunter2x"),
    ("No HIP GPUs are available  API_KEY: 'k-12345-abcde'", "k-12345-abcde"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_the_seen_line_never_echoes_a_secret(text: str, secret: str) -> None:
    [e] = explain_text(text)
    assert secret not in e.matched and "<redacted>" in e.matched
    assert secret not in explain_module.render_explanations([e])


def test_an_unknown_error_line_is_redacted_too() -> None:
    result = diagnose("HIP error: something new happened token=ghp_abcdefghijklmnopqrstuvwxyz0123")
    assert result.verdict == UNKNOWN_GPU and result.error_line
    assert "ghp_" not in result.error_line


@given(st.text(max_size=300))
@settings(max_examples=200)
def test_redact_never_raises(text: str) -> None:
    assert isinstance(redact(text), str)


def test_a_huge_paste_is_read_quickly_and_fully_at_its_end() -> None:
    text = ("Epoch 1: loss 0.5 " * 40 + "\n") * 12_000 + "RuntimeError: No HIP GPUs are available\n"
    assert len(text) > 5_000_000
    started = time.monotonic()
    assert [e.key for e in explain_text(text)] == ["hip-no-gpus-available"]
    assert time.monotonic() - started < 60


# --- the command line: the same exit codes in text and JSON ---------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(explain_command)
    return app


def snapshot(tmp_path: Path, kind: str = "amd") -> str:
    path = str(tmp_path / "snap.json")
    host = host_for(kind)
    assert isinstance(host, SnapshotHost)
    save_snapshot(host.data, path)
    return path


@pytest.mark.parametrize(("text", "code", "verdict"), [
    ("Unable to open /dev/kfd read-write: Permission denied", 0, RECOGNIZED),
    ("HIP error: an operation nobody has seen before", 1, UNKNOWN_GPU),
    ("ModuleNotFoundError: No module named 'einops'", 1, NOT_GPU),
    ("all good", 1, NOT_GPU),
])
def test_exit_codes_are_the_same_with_and_without_json(tmp_path: Path, text: str, code: int,
                                                      verdict: str) -> None:
    snap = snapshot(tmp_path)
    plain = CliRunner().invoke(cli(), [text, "--from", snap])
    as_json = CliRunner().invoke(cli(), [text, "--from", snap, "--json"])
    assert plain.exit_code == as_json.exit_code == code
    data = json.loads(as_json.stdout)
    assert (data["verdict"], data["recognized"]) == (verdict, code == 0)


def test_cli_says_an_unknown_gpu_error_is_unknown_and_offers_the_report(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["HIP error: an operation nobody has seen before",
                                        "--from", snapshot(tmp_path)])
    query = "%22HIP+error%3A+an+operation+nobody+has+seen+before%22"
    assert result.exit_code == 1 and result.stderr == ""
    assert result.stdout == (
        "not known to rocmdoctor  [unknown]\n"
        "  seen:    line 1: HIP error: an operation nobody has seen before\n"
        "  cause:   not known: rocmdoctor has no entry for this message and guesses no cause.\n"
        "  fact:    none the text states (no target, library or version)\n"
        "  confirm: rocmdoctor report (this machine's facts, to attach to an issue)\n"
        '  search:  "HIP error: an operation nobody has seen before"\n'
        f"           ROCm: https://github.com/ROCm/ROCm/issues?q={query}\n"
        f"           PyTorch: https://github.com/pytorch/pytorch/issues?q={query}\n")


def test_cli_gives_no_gpu_advice_for_a_program_error(tmp_path: Path) -> None:
    text = fixture_text("errors/unrelated-missing-module--pope-einops.txt")
    result = CliRunner().invoke(cli(), ["--from", snapshot(tmp_path)], input=text)
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (f"rocmdoctor: {NOTHING}\n  the error it shows comes from the "
                             "program or its packages, not the GPU stack: ModuleNotFoundError: "
                             "No module named 'einops'\n")


def test_cli_container_snapshot_gives_the_container_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), ["Unable to open /dev/kfd read-write: Permission denied",
                                        "--from", snapshot(tmp_path, "amd-container"), "--json"])
    assert result.exit_code == 0
    [e] = json.loads(result.stdout)["explanations"]
    assert e["environment"] == "container" and e["fix"]["text"] == ENTRY[
        "kfd-permission"].container_fix



FIXTURE_LINES = sorted({line for c in CASES[::3]
                        for line in fixture_text("errors/" + c.name).splitlines()[:6] if line})


@given(st.lists(st.one_of(st.sampled_from(FIXTURE_LINES), st.text(max_size=80)), max_size=8),
       st.sampled_from(["none", "amd", "nvidia-container", "amd-wsl"]))
@settings(max_examples=150, deadline=None)
def test_any_mix_of_real_lines_and_noise_gets_a_verdict(lines: list[str], kind: str) -> None:
    result = diagnose("\n".join(lines), host_for(kind))
    assert result.verdict in (RECOGNIZED, UNKNOWN_GPU, NOT_GPU)
    assert bool(result.explanations) == (result.verdict == RECOGNIZED)
    explain_module.render_explanations(result.explanations)
