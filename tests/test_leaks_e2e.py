"""Nothing personal leaves the machine: secrets of many kinds, the user, the host name and the
home folder are planted, then every command that writes a file or prints facts runs through
the real CLI in a subprocess, and none of them may show up anywhere (stdout, stderr, files).

Planted where rocmdoctor really reads: the environment (secret-named variables, URLs with
credentials, token-shaped values, home paths), the output of a tool the report shows
(`rocm-smi` and `hipcc` on PATH), the Python that trains (a virtual environment inside the
home folder), the host name (a UTS namespace where `unshare` allows one) and a pasted error.

Two outputs name the host on purpose: `check --json` carries the short host name as
`machine.node` (fleet views tell nodes apart by it, docs/fleet.md) and `fleet summarize`
prints it. There the host name is allowed as that field, nowhere else.
"""

from __future__ import annotations

import gzip
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest

from rocmdoctor.redact import COMMON_NAMES

pytestmark = pytest.mark.e2e

USER = "zelvina"
HOST = "qx7gpunode.cluster.example.org"
SHORT_HOST = HOST.split(".")[0]

# One secret per kind; every value is unique, so a hit names the kind that leaked.
TOKENS = {
    "github": "ghp_" + "Q7wErTy8uIoP1aSdFgH2jKlZx3CvBnM4qW5e",
    "github-pat": "github_pat_" + "11AB2CDEF0" + "x9Y8z7W6v5U4t3S2r1Q0p",
    "huggingface": "hf_" + "LmNoPqRsTuVwXyZ0123aBcDeFgHiJk",
    "openai": "sk-" + "proj-Aa1Bb2Cc3Dd4Ee5Ff6Gg7Hh8",
    "slack": "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKl",
    "aws-access-key": "AKIA" + "Q2W3E4R5T6Y7U8I9",
    "gitlab": "glpat-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJ" + "hbGciOiJIUzI1NiJ9.eyJzdWIiOiJ6ZWx2aW5hIn0.s1gN4tUr3x",
}
PASSWORDS = {
    "hf-endpoint-url": "urlpw-Hf4k",
    "redis-url": "redispw-R3d",
    "triton-url": "tritonpw-T9x",
    "password-name": "Tr0ub4dor&3-pass",
    "pw-name": "plainpw&7-pw",
    "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz9qx7SECRET",
    "azure-key": "azkey&Zz-9/+plain",
}
SECRETS = {**TOKENS, **PASSWORDS}


def _planted_env(home: Path, bindir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k in ("LANG", "LC_ALL", "TMPDIR", "PYTHONHASHSEED", "SYSTEMROOT")}
    env.update({
        "HOME": str(home), "USER": USER, "LOGNAME": USER,
        "PATH": f"{bindir}:{home}/.local/bin:{os.environ.get('PATH', '/usr/bin:/bin')}",
        # credentials inside URLs
        "HF_ENDPOINT": f"https://{USER}:{PASSWORDS['hf-endpoint-url']}@hub.example.org",
        "TORCHINDUCTOR_REDIS_URL": f"redis://:{PASSWORDS['redis-url']}@cache.example.org:6379",
        "TRITON_REMOTE_CACHE": f"https://u:{PASSWORDS['triton-url']}@triton.example.org/c",
        # secret by its name only (the values are not token-shaped)
        "PYTORCH_DB_PASSWORD": PASSWORDS["password-name"],
        "PYTORCH_PROFILER_PW": PASSWORDS["pw-name"],
        "AWS_SECRET_ACCESS_KEY": PASSWORDS["aws-secret"],
        "AZURE_STORAGE_KEY": PASSWORDS["azure-key"],
        # token-shaped values, some under names that say nothing
        "HF_TOKEN": TOKENS["huggingface"],
        "GITHUB_TOKEN": TOKENS["github"],
        "OPENAI_API_KEY": TOKENS["openai"],
        "SLACK_BOT_TOKEN": TOKENS["slack"],
        "AWS_ACCESS_KEY_ID": TOKENS["aws-access-key"],
        "TRANSFORMERS_REMOTE": f"https://oauth2:{TOKENS['gitlab']}@gitlab.example.org/m",
        "HF_HUB_NOTE": f"mirror with {TOKENS['google']} and {TOKENS['github-pat']}",
        "TORCH_AUTH_HEADER": f"Bearer {TOKENS['jwt']}",
        # home paths
        "HF_HUB_CACHE": f"{home}/.cache/huggingface/hub",
        "TRITON_HOME": f"{home}/.triton",
        "PYTHONPATH": f"{home}/src",
        # not a secret: InfiniBand's partition key (NCCL's documentation)
        "NCCL_IB_PKEY": "0x8001",
    })
    return env


def _fake_tools(bindir: Path, home: Path) -> None:
    """`rocm-smi` and `hipcc`, which `report` and `snapshot` run and show, printing the
    planted facts the way a real tool prints a path, a URL or an account."""
    lines = [
        "============================ ROCm System Management Interface ============",
        'echo "node $(uname -n) user $USER"',
        f"models at {home}/models, logs at /home/{USER}/logs",
        f"pulled from https://{USER}:{PASSWORDS['hf-endpoint-url']}@hub.example.org/x",
        f"redis://:{PASSWORDS['redis-url']}@cache.example.org:6379",
        *(f"{kind}: {value}" for kind, value in TOKENS.items()),
        "================================= End of ROCm SMI Log ====================",
    ]
    body = "\n".join(line if line.startswith("echo ") else f"echo '{line}'" for line in lines)
    (bindir / "rocm-smi").write_text(f"#!/bin/sh\n{body}\n")
    (bindir / "hipcc").write_text(
        "#!/bin/sh\necho 'HIP version: 6.2.41133-dd7f95766'\n"
        f"echo 'InstalledDir: {home}/rocm/llvm/bin'\necho 'token {TOKENS['huggingface']}'\n")
    for tool in ("rocm-smi", "hipcc"):
        (bindir / tool).chmod(0o755)


def _python_in_home(home: Path) -> str:
    """The Python that trains, in a virtual environment inside the home folder (as most
    people have it): the same interpreter and packages as the one running the tests."""
    venv = home / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    if sys.prefix != sys.base_prefix:
        shutil.copy(Path(sys.prefix) / "pyvenv.cfg", venv / "pyvenv.cfg")
        (venv / "lib").symlink_to(Path(sys.prefix) / "lib")
        python.symlink_to(os.path.realpath(sys.executable))
    else:
        python.symlink_to(sys.executable)
    return str(python)


def _uts_prefix() -> Optional[list[str]]:
    """A command prefix that runs its command under the planted host name, where a UTS
    namespace can be had (root, or unprivileged user namespaces)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    for extra in ([], ["--user", "--map-root-user"]):
        prefix = [unshare, *extra, "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', HOST]
        try:
            probe = subprocess.run([*prefix, "uname", "-n"], capture_output=True, text=True,
                                   timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0 and probe.stdout.strip() == HOST:
            return prefix
    return None


@dataclass
class Machine:
    home: Path
    out: Path
    python: str
    env: dict[str, str]
    prefix: list[str]
    host_names: tuple[str, ...]
    runs: dict[str, tuple[list[str], subprocess.CompletedProcess[str]]] = field(
        default_factory=dict)

    def run(self, name: str, *args: str, stdin: Optional[str] = None,
            timeout: float = 240) -> subprocess.CompletedProcess[str]:
        argv = [*self.prefix, self.python, "-m", "rocmdoctor", *args]
        r = subprocess.run(argv, capture_output=True, text=True, env=self.env, cwd=self.out,
                           timeout=timeout, input=stdin,
                           stdin=None if stdin is not None else subprocess.DEVNULL)
        self.runs[name] = (list(args), r)
        return r

    def planted(self, with_host: bool = True) -> dict[str, str]:
        found = {f"secret {k}": v for k, v in SECRETS.items()}
        found["user name"] = USER
        found["home folder"] = str(self.home)
        real_user = _real_user()
        if real_user:
            found["the real user name"] = real_user
        if with_host:
            found.update({f"host name {h}": h for h in self.host_names})
        return found


def _real_user() -> Optional[str]:
    import pwd

    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None
    return name if len(name) >= 3 and name not in COMMON_NAMES else None


EXPLAIN_TEXT = (
    "Traceback (most recent call last):\n"
    f'  File "/home/{USER}/train.py", line 12, in <module>\n'
    f"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB (token "
    f"{TOKENS['huggingface']}, https://{USER}:{PASSWORDS['hf-endpoint-url']}@hub.example.org, "
    f"{TOKENS['github']})\n"
    f"HSA_STATUS_ERROR_OUT_OF_RESOURCES {TOKENS['openai']} AWS_SECRET_ACCESS_KEY="
    f"{PASSWORDS['aws-secret']} --password {PASSWORDS['password-name']}\n"
)


@pytest.fixture(scope="module")
def machine() -> Iterator[Machine]:
    # Not pytest's tmp_path: its folder is named after the account (pytest-of-<user>).
    base = Path(tempfile.mkdtemp(prefix="rocmdoctor-leaks-"))
    home = base / "users" / USER
    bindir = home / "bin"
    bindir.mkdir(parents=True)
    out = base / "out"
    out.mkdir()
    _fake_tools(bindir, home)
    python = _python_in_home(home)
    env = _planted_env(home, bindir)
    prefix = _uts_prefix()
    if prefix is not None:
        host_names: tuple[str, ...] = (HOST, SHORT_HOST)
    else:  # the real host name then, where it is long enough to be told from other words
        real = platform.node()
        host_names = tuple(h for h in {real, real.split(".")[0]}
                           if len(h) >= 3 and h not in COMMON_NAMES)
    m = Machine(home, out, python, env, prefix or [], host_names)
    first = [
        ("check", ("check",)),
        ("check --json", ("check", "--json", "-o", str(out / "check.json"))),
        ("snapshot", ("snapshot", "-o", str(out / "snap.json.gz"))),
        ("report --snapshot", ("report", "--snapshot", str(out / "report-snap.json"), "-o",
                               str(out / "report.md"))),
        ("report (markdown)", ("report",)),
        ("report --format text", ("report", "--format", "text")),
        ("report --format json", ("report", "--format", "json", "-o",
                                  str(out / "report.json"))),
        ("explain", ("explain", EXPLAIN_TEXT)),
        ("bench --json", ("bench", "--model", "tinycnn", "--batch-size", "2", "--steps", "3",
                          "--warmup", "1", "--image-size", "32", "--device", "cpu", "--json",
                          str(out / "bench.json"))),
        ("tune --output", ("tune", "--model", "tinycnn", "--batch-size", "2", "--steps", "3",
                           "--warmup", "1", "--image-size", "32", "--device", "cpu",
                           "--budget", "30s", "--max-trials", "1", "--keep-batch-size",
                           "--output", str(out / "tune.json"), "--export",
                           str(out / "best.env"), "--html", str(out / "tune.html"))),
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:  # each waits on its child: two at once
        list(pool.map(lambda job: m.run(job[0], *job[1]), first))
    m.run("report --from", "report", "--from", str(out / "snap.json.gz"))
    m.run("fleet summarize", "fleet", "summarize", str(out / "check.json"))
    yield m
    shutil.rmtree(base, ignore_errors=True)


FILES = {
    "check --json": ["check.json"],
    "snapshot": ["snap.json.gz"],
    "report --snapshot": ["report-snap.json", "report.md"],
    "report --format json": ["report.json"],
    "bench --json": ["bench.json"],
    "tune --output": ["tune.json", "best.env", "tune.html"],
}
COMMANDS = ("check", "check --json", "snapshot", "report --snapshot", "report (markdown)",
            "report --format text", "report --format json", "report --from", "explain",
            "bench --json", "tune --output", "fleet summarize")


def _read(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")


def _without_node(text: str) -> str:
    """check JSON with `machine.node` (the field that names the node on purpose) removed."""
    data: Any = json.loads(text)
    data.get("machine", {}).pop("node", None)
    return json.dumps(data)


@pytest.mark.parametrize("name", COMMANDS)
def test_nothing_planted_appears(machine: Machine, name: str) -> None:
    args, r = machine.runs[name]
    assert r.returncode in (0, 1), f"rocmdoctor {' '.join(args)}: {r.returncode}\n{r.stderr}"
    outputs = {"stdout": r.stdout, "stderr": r.stderr}
    for file in FILES.get(name, []):
        path = machine.out / file
        assert path.is_file(), f"{name} wrote no {file}: {r.stderr}"
        outputs[file] = _read(path)
    if name == "check --json":
        outputs["check.json"] = _without_node(outputs["check.json"])
    planted = machine.planted(with_host=name != "fleet summarize")
    leaks = [f"{what} ({value!r}) in {where}" for where, text in outputs.items()
             for what, value in planted.items() if value in text]
    assert not leaks, "\n".join(leaks)


def test_the_planted_facts_reached_the_outputs(machine: Machine) -> None:
    """The test above proves something only where the planted facts were read: the tool
    output, the home paths, the URLs and the Python in the home folder are in the outputs,
    redacted."""
    snap = json.loads(_read(machine.out / "snap.json.gz"))
    assert snap["commands"]["rocm-smi"]["stdout"].count("<redacted>") >= len(TOKENS)
    assert snap["env"]["HF_ENDPOINT"] == "https://<redacted>@hub.example.org"
    assert snap["env"]["TORCHINDUCTOR_REDIS_URL"] == "redis://<redacted>@cache.example.org:6379"
    assert snap["env"]["PYTORCH_DB_PASSWORD"] == "<redacted>"
    assert snap["env"]["PYTORCH_PROFILER_PW"] == "<redacted>"
    assert snap["env"]["HF_HUB_CACHE"] == "~/.cache/huggingface/hub"
    assert snap["env"]["NCCL_IB_PKEY"] == "0x8001"
    assert snap["python"]["executable"] == "~/venv/bin/python"
    assert snap["user"]["name"] == ("<redacted>" if _real_user() else "root")
    report = _read(machine.out / "report.md")
    assert "~/venv/bin/python" in report and "models at ~/models" in report
    assert "PYTORCH_DB_PASSWORD=<redacted>" in report
    assert "PYTORCH_PROFILER_PW=<redacted>" in report
    bench = json.loads(_read(machine.out / "bench.json"))
    assert bench["environment"]["knobs"]["env"]["TORCHINDUCTOR_CACHE_DIR"] == (
        "/tmp/torchinductor_<redacted>")
    explain = machine.runs["explain"][1].stdout
    assert "seen:" in explain and "HIP out of memory" in explain
    if machine.prefix:  # the host name was planted: the report had it to hide
        assert "node <redacted> user <redacted>" in report


def test_a_file_written_in_the_home_folder_is_named_with_a_tilde(machine: Machine) -> None:
    # "wrote PATH" lines are pasted with the rest of the output
    bench = machine.run("bench --json home", "bench", "--model", "tinycnn", "--batch-size",
                        "2", "--steps", "3", "--warmup", "1", "--image-size", "32",
                        "--device", "cpu", "--json", str(machine.home / "bench.json"))
    assert bench.returncode == 0, bench.stderr
    assert "wrote ~/bench.json" in bench.stderr.splitlines()
    snap = machine.run("snapshot home", "snapshot", "-o", str(machine.home / "snap.json.gz"))
    assert snap.returncode == 0, snap.stderr
    line = next(x for x in snap.stderr.splitlines() if x.startswith("wrote "))
    assert line.startswith("wrote ~/snap.json.gz: ")
    assert line.endswith("replay with: rocmdoctor check --from ~/snap.json.gz")
    for r in (bench, snap):
        assert str(machine.home) not in r.stderr + r.stdout
        assert USER not in r.stderr + r.stdout
