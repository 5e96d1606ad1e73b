"""The host boundary's own limits and names: output cut at its cap, children in their own
session, the variables the measured run records, NVML's reason names, which Python runs our
child scripts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rocmdoctor.host.deep import DEEP_TOOL
from rocmdoctor.host.deep_child import ENV_NAMES, Run
from rocmdoctor.host.deep_telemetry import decode_reasons
from rocmdoctor.host.live import LiveHost
from rocmdoctor.host.process import MAX_OUTPUT_CHARS, run_command, spawn


def test_output_is_cut_at_two_mebibytes() -> None:
    assert MAX_OUTPUT_CHARS == 2 * 1024 * 1024
    done = run_command([sys.executable, "-c", "print('x' * 3_000_000, end='')"], timeout=30)
    assert done.returncode == 0 and len(done.stdout) == MAX_OUTPUT_CHARS


def test_a_child_starts_in_a_session_of_its_own() -> None:
    child = spawn([sys.executable, "-c", "import os; print(os.getsid(0))"])
    out, _ = child.communicate(timeout=30)
    assert int(out) == child.pid


def test_the_measured_run_records_every_variable_that_changes_what_it_measures() -> None:
    env = {name: f"value of {name}" for name in ENV_NAMES}
    recorded = Run({**env, "HOME": "/root", "PATH": "/usr/bin"}, 0.0).result["env"]
    assert recorded == env
    assert {"MIOPEN_DEBUG_DISABLE_FIND_DB", "CUDA_DEVICE_MAX_CONNECTIONS",
            "GPU_MAX_HW_QUEUES", "HSA_OVERRIDE_GFX_VERSION"} <= set(recorded)


def test_nvml_clock_event_reasons_are_named_as_nvidia_smi_prints_them() -> None:
    assert decode_reasons(0x2 | 0x4 | 0x100) == [
        "Applications Clocks Setting", "SW Power Cap", "Display Clock Setting"]
    assert decode_reasons(0) == []


@pytest.mark.live
def test_our_child_scripts_run_in_the_python_the_probe_found() -> None:
    host = LiveHost()
    host.python = lambda: {"executable": "/venv/bin/python"}  # type: ignore[method-assign]
    assert host._resolve([DEEP_TOOL])[0] == "/venv/bin/python"
    # the tool is the command's first word, whatever its arguments are; a tool's name as an
    # argument of another command is only an argument
    from rocmdoctor.host.live import COLLECTIVES_SCRIPT, COLLECTIVES_TOOL
    assert host._resolve([COLLECTIVES_TOOL, "--sizes", "1"]) == [
        "/venv/bin/python", COLLECTIVES_SCRIPT, "--sizes", "1"]
    assert host._resolve(["echo", DEEP_TOOL]) == ["echo", DEEP_TOOL]


def _malformed(**fields: object) -> str:
    from rocmdoctor.host.snapshot import SnapshotError, parse_snapshot
    from tests.helpers import make_snapshot
    data = make_snapshot()
    for where, value in fields.items():
        part, _, key = where.partition("__")
        if key:
            data[part][key] = value
        else:
            data[part] = value
    with pytest.raises(SnapshotError) as err:
        parse_snapshot(data, "s.json")
    return str(err.value)


def test_a_malformed_snapshot_names_the_field_and_value_cut_at_their_edges() -> None:
    """The message cuts a map key past 80 characters to 77 and "...", a string value past 40 to
    37, a number past 30 digits to 27; what fits is shown whole, non-ASCII as JSON escapes."""
    k80, k81 = "K" * 80, "K" * 81
    assert _malformed(env__A=1) == ('malformed snapshot: env["A"] must be a string, not the '
                                    "number 1 (s.json)")
    assert _malformed(env={k80: 1}) == (f'malformed snapshot: env["{k80}"] must be a string, '
                                        "not the number 1 (s.json)")
    assert _malformed(env={k81: 1}) == (f'malformed snapshot: env["{"K" * 77}..."] must be a '
                                        "string, not the number 1 (s.json)")
    assert _malformed(env={"\u00e9": 1}) == ('malformed snapshot: env["\\u00e9"] must be a '
                                             "string, not the number 1 (s.json)")
    s40, s41 = "u" * 40, "u" * 41
    assert _malformed(user__uid=s40) == (f'malformed snapshot: user.uid must be an integer, '
                                         f'not the string "{s40}" (s.json)')
    assert _malformed(user__uid=s41) == (f'malformed snapshot: user.uid must be an integer, '
                                         f'not the string "{"u" * 37}..." (s.json)')
    assert _malformed(user__uid="\u00e9") == ('malformed snapshot: user.uid must be an integer,'
                                              ' not the string "\\u00e9" (s.json)')
    n30, n31 = 10 ** 29, 10 ** 30  # 30 and 31 digits
    assert _malformed(platform__kernel_release=n30) == (
        f"malformed snapshot: platform.kernel_release must be a string, not the number {n30}"
        " (s.json)")
    assert _malformed(platform__kernel_release=n31) == (
        "malformed snapshot: platform.kernel_release must be a string, not the number "
        f"{str(n31)[:27]}... (s.json)")


def test_a_snapshot_is_read_up_to_256_mib_once_decompressed_and_refused_past_it(
        tmp_path: Path) -> None:
    """A real snapshot padded with JSON whitespace to exactly 256 MiB loads; one byte more is
    refused with its one line, before it is parsed."""
    import gzip
    import json

    from rocmdoctor.host.snapshot import SnapshotError, load_snapshot
    from tests.helpers import make_snapshot
    body = json.dumps(make_snapshot()).encode("utf-8")
    limit = 256 * 1024 * 1024

    def padded(name: str, size: int) -> str:
        path = tmp_path / name
        with gzip.open(path, "wb", compresslevel=1) as gz:
            gz.write(body)
            left, chunk = size - len(body), b" " * (1 << 20)
            while left > 0:
                gz.write(chunk[:left])
                left -= len(chunk)
        return str(path)

    assert load_snapshot(padded("edge.json.gz", limit)) == json.loads(body)
    over = padded("over.json.gz", limit + 1)
    with pytest.raises(SnapshotError) as err:
        load_snapshot(over)
    assert str(err.value) == (f"{over} is larger than 256 MiB once decompressed; a snapshot "
                              "is a few MiB, so it is refused")


def test_a_tagged_child_that_has_exited_is_not_among_the_live_ones() -> None:
    """A tagged process that exited but was not waited for yet (a zombie) is not live: only
    running ones are reaped and counted as survivors."""
    import os
    import subprocess
    import time

    import psutil

    from rocmdoctor.host.process import TAG_ENV, tagged
    tag = f"zombie-test-{os.getpid()}"
    env = dict(os.environ, **{TAG_ENV: tag})
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
    quick = subprocess.Popen([sys.executable, "-c", "pass"], env=env)
    try:
        deadline = time.monotonic() + 20
        while psutil.Process(quick.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.05)
        assert [p.pid for p in tagged(tag)] == [sleeper.pid]
    finally:
        sleeper.kill()
        sleeper.wait()
        quick.wait()
