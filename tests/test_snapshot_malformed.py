"""A snapshot whose fields have the wrong type is refused at load with one line naming the
field (exit 2), from every command that takes --from: never a crashed check, an internal
error or a false finding drawn from a value of the wrong kind."""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rocmdoctor.cli.app import app
from rocmdoctor.host.snapshot import SnapshotError, load_snapshot, parse_snapshot, save_snapshot

FIXTURES = Path(__file__).parent / "fixtures"
H200 = FIXTURES / "h200-snapshot.json.gz"


def real_snapshot(name: str = "h200-snapshot.json.gz") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((FIXTURES / name).read_bytes()))
    return data


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return mutate


KFD = "/dev/nvidiactl"
SMI = "nvidia-smi"
MUTATIONS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("uid-string", _set("user", "uid", value="abc"), 'user.uid must be an integer, not the '
                                                       'string "abc"'),
    ("uid-bool", _set("user", "uid", value=True), "user.uid must be an integer, not true"),
    ("groups-string", _set("user", "groups", value="render"), "user.groups must be a list"),
    ("group-number", _set("user", "groups", value=[44]), "user.groups[0] must be a string"),
    ("user-list", _set("user", value=[]), "user must be an object, not a list"),
    ("paths-entry-string", _set("paths", KFD, value="char"),
     f'paths["{KFD}"] must be an object, not the string "char"'),
    ("mode-number", _set("paths", KFD, "mode", value=777),
     f'paths["{KFD}"].mode must be an octal string such as "0660", not the number 777'),
    ("mode-not-octal", _set("paths", KFD, "mode", value="rw-rw----"),
     f'paths["{KFD}"].mode must be an octal string'),
    ("path-type-unknown", _set("paths", KFD, "type", value="chardev"),
     f'paths["{KFD}"].type must be one of file, dir, symlink, char, block, other'),
    ("readable-string", _set("paths", KFD, "readable", value="yes"),
     f'paths["{KFD}"].readable must be true or false'),
    ("gid-string", _set("paths", KFD, "gid", value="110"), f'paths["{KFD}"].gid must be an '
                                                            "integer or null"),
    ("symlink-target-number", _set("paths", KFD, "target", value=5),
     f'paths["{KFD}"].target must be a string or null, not the number 5'),
    ("stdout-number", _set("commands", SMI, "stdout", value=42),
     f'commands["{SMI}"].stdout must be a string, not the number 42'),
    ("returncode-string", _set("commands", SMI, "returncode", value="0"),
     f'commands["{SMI}"].returncode must be an integer'),
    ("timed-out-number", _set("commands", SMI, "timed_out", value=0),
     f'commands["{SMI}"].timed_out must be true or false'),
    ("duration-infinite", _set("commands", SMI, "duration_s", value=float("inf")),
     f'commands["{SMI}"].duration_s must be a finite number'),
    ("command-list", _set("commands", SMI, value=["x"]), f'commands["{SMI}"] must be an object'),
    ("env-number", _set("env", "CUDA_VERSION", value=13.0),
     'env["CUDA_VERSION"] must be a string, not the number 13.0'),
    ("file-null", _set("files", "/proc/version", value=None),
     'files["/proc/version"] must be a string, not null'),
    ("dir-string", _set("dirs", "/opt", value="rocm"), 'dirs["/opt"] must be a list'),
    ("kernel-number", _set("platform", "kernel_release", value=6),
     "platform.kernel_release must be a string"),
    ("python-string", _set("python", value="3.12"), "python must be an object"),
    ("packages-number", _set("python", "packages", "torch", value=2.11),
     'python.packages["torch"] must be a string'),
    ("imported-string", _set("python", "torch", "imported", value="false"),
     "python.torch.imported must be true or false"),
    ("device-count-string", _set("python", "torch", "device_count", value="1"),
     "python.torch.device_count must be an integer"),
    ("arch-list-string", _set("python", "torch", "arch_list", value="sm_90"),
     "python.torch.arch_list must be a list"),
    ("device-memory-float", _set("python", "torch", "devices", 0, "total_memory", value=1.5e11),
     "python.torch.devices[0].total_memory must be an integer or null"),
    ("devices-entry-string", _set("python", "torch", "devices", 0, value="H200"),
     "python.torch.devices[0] must be an object"),
    ("smoke-ok-string", _set("python", "torch", "smoke", "ok", value="true"),
     "python.torch.smoke.ok must be true, false or null"),
]


@pytest.mark.parametrize(("mutate", "message"), [(m, msg) for _, m, msg in MUTATIONS],
                         ids=[name for name, _, _ in MUTATIONS])
def test_a_wrong_typed_field_is_named_at_load(
        tmp_path: Path, mutate: Callable[[dict[str, Any]], None], message: str) -> None:
    data = real_snapshot()
    mutate(data)
    path = tmp_path / "snap.json"
    save_snapshot(data, str(path))
    with pytest.raises(SnapshotError) as info:
        load_snapshot(str(path))
    text = str(info.value)
    assert text.startswith("malformed snapshot: " + message), text
    assert text.endswith(f"({path})") and "\n" not in text


COMMANDS = {
    "check": ["check"],
    "check --json": ["check", "--json"],
    "report": ["report"],
    "explain": ["explain", "RuntimeError: CUDA error: out of memory"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(("mutate", "message"), [(m, msg) for _, m, msg in MUTATIONS],
                         ids=[name for name, _, _ in MUTATIONS])
def test_every_command_that_reads_a_snapshot_refuses_it_in_one_line(
        tmp_path: Path, command: str, mutate: Callable[[dict[str, Any]], None],
        message: str) -> None:
    data = real_snapshot()
    mutate(data)
    path = tmp_path / "snap.json.gz"
    save_snapshot(data, str(path))
    result = CliRunner().invoke(app, [*COMMANDS[command], "--from", str(path)])
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    assert result.stderr.startswith("rocmdoctor: error: malformed snapshot: " + message)
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("name", ["h200-snapshot.json.gz", "h200x2-snapshot.json.gz"])
def test_real_snapshots_are_well_formed(name: str) -> None:
    data = real_snapshot(name)
    assert parse_snapshot(copy.deepcopy(data)) == data


def test_nulls_where_a_capture_writes_them_are_accepted() -> None:
    data = real_snapshot()
    data["paths"][KFD].update(owner=None, group=None, uid=None, gid=None)
    data["python"]["torch"].update(hip=None, error=None, smoke={"ok": None, "error": None})
    data["future"] = {"anything": [1, "x"]}
    data["commands"][SMI]["new_field"] = 5
    assert parse_snapshot(copy.deepcopy(data)) == data
    data["python"] = None  # the probe was not run
    assert parse_snapshot(data)["python"] is None


@pytest.mark.parametrize(("content", "message"), [
    (b'{"format": "rocmdoctor-snapshot/1", "user": {"uid": 1' + b"0" * 5000 + b"}}",
     "is not a usable JSON snapshot"),
    (b"[" * 200_000 + b"]" * 200_000, "is not a usable JSON snapshot"),
    (b'{"format": 5}', "has format the number 5; this rocmdoctor reads"),
])
def test_json_python_cannot_hold_is_refused(tmp_path: Path, content: bytes,
                                            message: str) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(content)
    result = CliRunner().invoke(app, ["check", "--from", str(path)])
    assert result.exit_code == 2, (result.output, result.exception)
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def _gzip_bomb(path: Path, mib: int) -> None:
    """A gzip file that expands to a valid-looking snapshot of `mib` MiB (one huge file
    content), written in chunks: about 1 KB per MiB on disk, never all in memory."""
    with gzip.open(path, "wb", compresslevel=1) as gz:
        gz.write(b'{"format": "rocmdoctor-snapshot/1", "files": {"/proc/version": "')
        block = b"a" * (1024 * 1024)
        for _ in range(mib):
            gz.write(block)
        gz.write(b'"}}')


# The child reports its own peak memory (VmHWM, which exec resets; the rusage of a child
# would also count the memory of the pytest process it was forked from).
_PEAK_CHILD = """
import sys
from rocmdoctor.cli.app import main
try:
    main(sys.argv[2:])
finally:
    with open("/proc/self/status") as status, open(sys.argv[1], "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")))
"""


def test_a_gzip_bomb_is_refused_while_decompressing(tmp_path: Path) -> None:
    """300 MiB once decompressed (about 300 KB on disk): refused at 256 MiB with one line,
    and the process never holds the whole of it (the old reader held it twice: the bytes,
    then the text)."""
    import subprocess
    import sys

    bomb = tmp_path / "snap.json.gz"
    _gzip_bomb(bomb, 300)
    assert bomb.stat().st_size < 2 * 1024 * 1024
    peak = tmp_path / "peak.txt"
    r = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(peak), "check", "--from",
                        str(bomb)], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    assert r.stderr == (f"rocmdoctor: error: {bomb} is larger than 256 MiB once decompressed; "
                        "a snapshot is a few MiB, so it is refused\n")
    kib = int(peak.read_text().split()[1])
    assert kib < 400 * 1024, f"peak memory {kib // 1024} MiB"


def test_a_plain_file_past_the_limit_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_bytes(b'{"format": "rocmdoctor-snapshot/1"}' + b" " * 2000)
    with pytest.raises(SnapshotError, match=r"larger than 1000 bytes once decompressed"):
        load_snapshot(str(path), limit=1000)
    assert load_snapshot(str(path), limit=4000)["format"] == "rocmdoctor-snapshot/1"
