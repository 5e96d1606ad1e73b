"""Long pastes are scanned whole, streaming, and the answer says what was left out; empty input
is a usage error; a GPU-stack error nothing knows gets the not-known answer (facts, checks, a
ready search) and guesses no cause."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rocmdoctor.cli.explain import explain_command
from rocmdoctor.explain import UNKNOWN_GPU, diagnose, diagnose_paste
from rocmdoctor.explain.reading import (
    HEAD_LINES,
    MIDDLE_CAP,
    SIGNAL,
    TAIL_LINES,
    read_chunks,
    read_text,
)
from rocmdoctor.explain.unknown import search_text
from rocmdoctor.host.snapshot import SnapshotHost, save_snapshot
from tests.explain_replay import cases, host_for, replay
from tests.helpers import fixture_text

NOISE = "Epoch 1: loss 0.5 " * 40  # 720 characters a line
ERROR = "RuntimeError: No HIP GPUs are available"


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command()(explain_command)
    return app


def snapshot(tmp_path: Path) -> str:
    path = str(tmp_path / "snap.json")
    host = host_for("amd")
    assert isinstance(host, SnapshotHost)
    save_snapshot(host.data, path)
    return path


def big_log(lines: int = 12_000, error_at: int = 5_000) -> str:
    return "\n".join(ERROR if i == error_at else NOISE for i in range(1, lines + 1)) + "\n"


def test_an_error_in_the_middle_of_a_5_mb_log_is_found_with_its_line() -> None:
    text = big_log()
    assert len(text) > 5_000_000
    found = diagnose(text)
    [e] = found.explanations
    assert (e.key, e.line, e.matched) == ("hip-no-gpus-available", 5_000, ERROR)
    assert found.scan is not None
    assert (found.scan.lines, found.scan.capped, found.scan.clipped) == (12_000, 0, 0)
    assert found.scan.kept == HEAD_LINES + TAIL_LINES + 4  # a line before, the error, two after
    assert found.scan.quiet == 12_000 - found.scan.kept
    assert found.scan.summary() == (
        f"read all 12,000 lines ({len(text):,} characters); {found.scan.quiet:,} lines that "
        f"name no error, warning, GPU or library were left out")


def test_the_cli_reads_a_5_mb_file_to_its_end_and_says_what_it_left_out(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(big_log(), encoding="utf-8")
    snap = snapshot(tmp_path)
    result = CliRunner().invoke(cli(), ["-f", str(log), "--from", snap])
    assert result.exit_code == 0
    assert "  seen:    line 5000: RuntimeError: No HIP GPUs are available" in result.stdout
    note = " ".join(result.stdout.split("  note:")[1].split())
    assert note.startswith("a long text: read all 12,000 lines (")
    assert "lines that name no error, warning, GPU or library were left out." in note
    data = json.loads(CliRunner().invoke(cli(), ["-f", str(log), "--json", "--from", snap]).stdout)
    assert data["scan"]["lines"] == 12_000 and data["scan"]["left_out"] > 0
    assert data["explanations"][0]["line"] == 5_000


def test_a_stream_is_read_in_chunks_to_its_end() -> None:
    pulled = []

    def chunks() -> Iterator[str]:
        text = big_log(lines=9_000, error_at=8_990)
        for start in range(0, len(text), 1 << 20):
            pulled.append(start)
            yield text[start:start + (1 << 20)]

    paste = read_chunks(chunks())
    assert len(pulled) == 7 and paste.scan is not None and paste.scan.lines == 9_000
    [e] = diagnose_paste(paste).explanations
    assert e.line == 8_990


def test_past_the_middle_cap_the_answer_says_how_many_were_left_out() -> None:
    warnings = MIDDLE_CAP + 500
    lines = [NOISE] * HEAD_LINES + [f"warning: step {i} " + "." * 100 for i in range(warnings)] \
        + [NOISE] * TAIL_LINES
    paste = read_text("\n".join(lines))
    assert paste.scan is not None and paste.scan.capped == 500
    assert "and 500 more from the middle, past the 20,000 such lines kept" in paste.scan.summary()


def test_a_short_text_is_read_whole_and_says_nothing_about_it() -> None:
    found = diagnose(ERROR)
    assert found.scan is None and found.explanations[0].line == 1


def test_every_known_message_of_the_fixtures_survives_the_middle_filter() -> None:
    for c in cases():
        lines = fixture_text("errors/" + c.name).splitlines()
        for e in replay(c).explanations:
            # the whole line the filter reads (`matched` is cut at 200 characters)
            whole = lines[e.line - 1] if 0 < e.line <= len(lines) else e.matched
            assert SIGNAL.search(whole), (c.name, whole[:300])


@pytest.mark.parametrize("args", [[""], ["   \n  "]])
def test_an_empty_text_is_a_usage_error(args: list[str]) -> None:
    result = CliRunner().invoke(cli(), args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "rocmdoctor: error: nothing to explain: the text is empty\n"


def test_empty_standard_input_and_an_empty_file_are_usage_errors(tmp_path: Path) -> None:
    stdin = CliRunner().invoke(cli(), [], input="")
    assert stdin.exit_code == 2
    assert stdin.stderr == "rocmdoctor: error: nothing to explain: the text is empty\n"
    empty = tmp_path / "empty.log"
    empty.write_text("", encoding="utf-8")
    result = CliRunner().invoke(cli(), ["-f", str(empty)])
    assert result.exit_code == 2
    assert result.stderr == f"rocmdoctor: error: nothing to explain: {empty} is empty\n"


# --- the not-known answer -------------------------------------------------------------------

FLASH = fixture_text("errors/novel-flash-attn--gfx1100-not-supported-rx7900xtx-rocm623.txt")


def test_an_unknown_library_error_lists_the_facts_and_asks_the_librarys_tracker() -> None:
    found = diagnose(FLASH)
    assert found.verdict == UNKNOWN_GPU and found.explanations == []
    unknown = found.unknown
    assert unknown is not None
    query = "%22is+invalid+or+not+supported+by+Flash-Attention%22"
    assert unknown.to_dict() == {
        "line": "gfx1100  is invalid or not supported by Flash-Attention", "line_number": 1,
        "facts": ["GPU target gfx1100 (line 1)", "libraries flash-attn", "ROCm 6.2.3 (line 7)"],
        "checks": [
            "rocmdoctor check --only torch-arch-support (does torch carry code for gfx1100)",
            "rocmdoctor check --only rocm-libraries (which ROCm libraries torch loads)",
            "rocmdoctor check --only torch-rocm-match (torch's ROCm against the system's)",
            "rocmdoctor report (this machine's facts, to attach to an issue)"],
        "search": "is invalid or not supported by Flash-Attention",
        "trackers": [
            {"name": "flash-attn",
             "url": f"https://github.com/Dao-AILab/flash-attention/issues?q={query}"},
            {"name": "ROCm", "url": f"https://github.com/ROCm/ROCm/issues?q={query}"},
            {"name": "PyTorch", "url": f"https://github.com/pytorch/pytorch/issues?q={query}"}]}


def test_the_cli_prints_the_not_known_answer_and_exits_1(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli(), [FLASH, "--from", snapshot(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout.startswith("not known to rocmdoctor  [unknown]\n"
                                    "  seen:    line 1: gfx1100  is invalid or not supported by "
                                    "Flash-Attention\n"
                                    "  cause:   not known: rocmdoctor has no entry for this "
                                    "message and guesses no cause.\n")


def test_an_error_raised_inside_triton_is_a_gpu_stack_error() -> None:
    # the error line names no GPU word: the frame that raised it decides
    text = ('Traceback (most recent call last):\n'
            '  File "/opt/venv/lib/python3.12/site-packages/triton/runtime/jit.py", line 9, in run\n'
            'ValueError: too many resources requested for launch')
    found = diagnose(text)
    assert found.verdict == UNKNOWN_GPU and found.unknown is not None
    assert found.unknown.searches[0][0] == "triton"
    assert "raised in triton, run (line 2)" in found.unknown.facts
    plain = text.replace("site-packages/triton/runtime", "my_project/kernels")
    assert diagnose(plain).verdict == "not-gpu"


@pytest.mark.parametrize(("line", "words"), [
    ("ERROR 03-26 05:25:01 engine.py:389] Unexpected error from cudaGetDeviceCount(). Error "
     "804: forward compatibility was attempted on non supported HW",
     "Unexpected error from cudaGetDeviceCount . Error forward compatibility was attempted on "
     "non supported HW"),
    (":1:rocdevice.cpp            :1824: 3852921762 us: [pid:9     tid:0x7fcd5fa0c4c0] "
     "HSA_AMD_AGENT_INFO_MEMORY_AVAIL query failed.", "HSA_AMD_AGENT_INFO_MEMORY_AVAIL query failed"),
    ("WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
     "xFormers can't load C++/CUDA extensions. xFormers was built for"),
    ("OSError: /home/alice/.venv/lib/libtorch_cuda.so: cannot open shared object file",
     "cannot open shared object file"),
])
def test_the_search_keeps_the_messages_words_only(line: str, words: str) -> None:
    assert search_text(line) == words
    assert not re.search(r"\d{3}|/home|0x", search_text(line))
