"""`rocmdoctor report`: golden Markdown from real captures, redaction everywhere, size limit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rocmdoctor.checks.registry import all_checks
from rocmdoctor.facts.collect_env import report_readings
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.model import Report, ReportFacts
from rocmdoctor.redact import Redactor
from rocmdoctor.render.report import (
    GITHUB_BODY_LIMIT,
    render_markdown,
    render_report_json,
    render_text,
)
from rocmdoctor.render.report_facts import report_facts
from rocmdoctor.runner import run_checks
from tests.golden import assert_golden
from tests.helpers import char_dev, fixture_text, make_snapshot
from tests.test_torch_checks import probe_from_collect_env

GOLDEN = Path(__file__).parent / "golden"


def ok(text: str) -> dict[str, Any]:
    return {"returncode": 0, "stdout": text, "stderr": "", "timed_out": False}


def amd_machine(*, rocminfo: str, probe: dict[str, Any], rocm: str, kernel: str,
                smi: dict[str, str], os_release: str, cpu: str,
                user: dict[str, Any] | None = None,
                env: dict[str, str] | None = None,
                kfd: dict[str, Any] | None = None) -> dict[str, Any]:
    commands = {"rocminfo": ok(fixture_text(rocminfo))}
    commands.update({k: ok(fixture_text(v)) for k, v in smi.items()})
    return make_snapshot(
        files={"/opt/rocm/.info/version": rocm + "\n", "/etc/os-release": os_release,
               "/sys/module/amdgpu/initstate": "live\n",
               "/proc/cpuinfo": f"processor\t: 0\nmodel name\t: {cpu}\n"
                                f"processor\t: 1\nmodel name\t: {cpu}\n"},
        paths={"/dev/kfd": kfd or char_dev(), "/dev/dri/renderD128": char_dev(),
               "/sys/module/amdgpu": {"type": "dir", "mode": "0755"},
               "/opt/rocm": {"type": "dir", "mode": "0755", "readable": True,
                             "executable": True}},
        commands=commands, kernel=kernel, python=probe, user=user, env=env or {},
    )


UBUNTU_2404 = 'NAME="Ubuntu"\nVERSION_ID="24.04"\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\nID=ubuntu\n'
UBUNTU_2204 = 'NAME="Ubuntu"\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.5 LTS"\nID=ubuntu\n'

MI100_CONTAINER = ("docker-run-rocm-terminal-rocminfo-kfd-permission-denied-rocm-smi-ok-mi100-x4-"
                   "TRUNCATED.txt")


def capture_sections(name: str) -> dict[str, str]:
    """A capture of several commands ("# rocminfo", "# rocm-smi", ...) split by heading."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in fixture_text(name).splitlines(keepends=True):
        if line.startswith("# "):
            current = line[2:].strip()
            sections.setdefault(current, [])
        elif line.startswith("$ "):
            current = None  # the next docker run: another image
        elif current is not None:
            sections[current].append(line)
    return {k: "".join(v).strip("\n") + "\n" for k, v in sections.items()}


def mi100_container() -> dict[str, Any]:
    """One real machine, ROCm-docker#116: 4x MI100 in rocm/rocm-terminal started with
    --device /dev/kfd --device /dev/dri --group-add video, as the image's user rocm-user
    (groups rocm-user sudo video). rocminfo cannot open /dev/kfd, rocm-smi (sysfs) sees the
    four GPUs. The thread's later comment shows /dev/kfd as root:render 0660 on the host and
    "cannot find name for group ID 993" inside: the devices' group is gid 993, unnamed there.
    The capture shows no render node listing, no torch, kernel, ROCm install or OS: the
    render node is taken to be like /dev/kfd (passed by the same --device flags, given to
    the same group by the udev rule), and the rest is left out (the report says unknown or
    not found, and the probe was not run)."""
    said = capture_sections(MI100_CONTAINER)
    device = {"type": "char", "mode": "0660", "owner": "root", "group": None, "uid": 0,
              "gid": 993, "readable": False, "writable": False, "executable": False}
    data = make_snapshot(
        files={"/.dockerenv": "", "/sys/module/amdgpu/initstate": "live\n"},
        paths={"/dev/kfd": device, "/dev/dri/renderD128": dict(device),
               "/sys/module/amdgpu": {"type": "dir", "mode": "0755"}},
        commands={
            # rocminfo prints its pre-check errors on stdout and exits 1 (rocminfo.cc).
            "rocminfo": {"returncode": 1, "stdout": said["rocminfo"], "stderr": "",
                         "timed_out": False},
            "rocm-smi": ok(said["rocm-smi"])},
        kernel="",
        # The uid is not in the capture: the image's user is not root (1000 stands for it).
        user={"name": "rocm-user", "uid": 1000,
              "groups": said["groups"].split()},
    )
    return data


MACHINES = {
    "gfx1150-890m-rocm7.2": lambda: amd_machine(
        rocminfo="rocminfo-gfx1150-890m-apu-plus-npu-dsp-agent-rocm7.2.txt",
        probe=probe_from_collect_env("collect_env-gfx1150-890m-rocm7.2-container-torch2.9.1.txt"),
        rocm="7.2.0", kernel="6.17.0-1012-oem", os_release=UBUNTU_2404,
        cpu="AMD Ryzen AI 9 HX 470 w/ Radeon 890M",
        smi={"amd-smi version": "amd-smi-version-gfx1150-890m-rocm7.2.0-inbox-driver.txt",
             "amd-smi static": "amd-smi-static-gfx1150-890m-apu-rocm7.2.0.txt"}),
    "mi300x-x4-rocm6.2": lambda: amd_machine(
        rocminfo="rocminfo-gfx942-mi300x-x4-epyc9474f.txt",
        probe=probe_from_collect_env("collect_env-vllm-gfx942-mi300x-x8-rocm6.2-topology.txt",
                                     device_count=4),
        rocm="6.2.1", kernel="5.15.0-116-generic", os_release=UBUNTU_2204,
        cpu="AMD EPYC 9474F 48-Core Processor",
        smi={"rocm-smi": "rocm-smi-concise-gfx942-mi300x-x4.txt"},
        env={"HIP_LAUNCH_BLOCKING": "1", "PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb=512"}),
    "mi100-x4-container-not-in-render-group": lambda: mi100_container(),
}


def render(data: dict[str, Any], fmt: str = "markdown", redact: bool = True,
           limit: int = GITHUB_BODY_LIMIT) -> str:
    host = SnapshotHost(data)
    report: Report = run_checks(host, all_checks())
    facts: ReportFacts = report_facts(report_readings(host, report.platform),
                                      report.tool_version)
    user = host.user.name
    redactor = Redactor((user,), (host.platform.hostname,), (f"/home/{user}",), enabled=redact)
    if fmt == "markdown":
        return render_markdown(report, facts, redactor, snapshot_name="snap.json.gz",
                               limit=limit)
    if fmt == "text":
        return render_text(report, facts, redactor)
    return render_report_json(report, facts, redactor)


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_golden_markdown(name: str) -> None:
    text = render(MACHINES[name]())
    assert_golden(GOLDEN / f"report-{name}.md", text)


def test_report_header_names_versions_and_every_gpu_against_the_arch_list() -> None:
    text = render(MACHINES["mi300x-x4-rocm6.2"]())
    assert "| ROCm | 6.2.1 at /opt/rocm (found by /opt/rocm; system packages) |" in text
    assert "| Kernel | 5.15.0-116-generic |" in text
    assert text.count("AMD Instinct MI300X (gfx942:sramecc+:xnack-, 304 CUs") == 4
    assert "HIP_LAUNCH_BLOCKING=1" in text
    assert "- ❌ **allocator-config** (fail)" in text
    assert "rocmdoctor check --from snap.json.gz" in text


def test_the_container_capture_is_read_whole() -> None:
    said = capture_sections(MI100_CONTAINER)
    assert said["rocminfo"].splitlines() == [
        "ROCk module is loaded", "Unable to open /dev/kfd read-write: Permission denied",
        "Failed to get user name to check for video group membership"]
    assert len([ln for ln in said["rocm-smi"].splitlines() if ln[:1].isdigit()]) == 4
    assert said["groups"] == "rocm-user sudo video\n"


def test_failures_come_first_with_their_fix() -> None:
    text = render(MACHINES["mi100-x4-container-not-in-render-group"]())
    problems = text.split("### Checks:")[1].split("<details>")[0]
    assert "**container** (fail)" in problems  # kfd-access depends on it: not run
    assert "--group-add 993" in problems
    assert "**kfd-access**" not in problems


SECRET = "ghp_Zx8Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8Lz0Xc3V"
UUID = "GPU-8c3e9a1f-2b4d-4e6f-8a0b-1c2d3e4f5a6b"


def planted() -> dict[str, Any]:
    data = MACHINES["gfx1150-890m-rocm7.2"]()
    data["user"] = {"name": "kowalski", "uid": 1000, "groups": ["kowalski", "render", "video"]}
    data["platform"]["hostname"] = "lab-node-17.example.org"
    data["env"] = {
        "HF_TOKEN": "plain-looking-value",
        "TORCH_HOME": "/home/kowalski/.cache/torch",
        "PYTORCH_HIP_ALLOC_CONF": "expandable_segments:True",
        "ROCM_SOMETHING": SECRET,
        "HIP_VISIBLE_DEVICES": UUID,
        "MIOPEN_USER_DB_PATH": "/home/kowalski/miopen on lab-node-17",
    }
    data["python"]["executable"] = "/home/kowalski/venvs/train/bin/python"
    data["commands"]["rocminfo"]["stdout"] += (
        f"\n  Uuid:                    {UUID}\nkowalski@lab-node-17:~$ rocminfo\n")
    data["commands"]["rocminfo"]["stderr"] = f"warning from /home/kowalski/.local {SECRET}\n"
    data["commands"]["amd-smi static"]["stdout"] += (
        "\n    ASIC_SERIAL: 0xABCDEF0123456789\n    PRODUCT_SERIAL: PN42XQ7\n"
        "Serial Number: 692323000123\n")
    return data


@pytest.mark.parametrize("fmt", ["markdown", "text", "json"])
def test_nothing_personal_survives_in_any_format(fmt: str) -> None:
    text = render(planted(), fmt)
    for leak in ("kowalski", "lab-node-17", SECRET, UUID, "8c3e9a1f", "0xABCDEF0123456789",
                 "PN42XQ7", "692323000123", "plain-looking-value"):
        assert leak not in text, leak
    assert "<redacted>" in text and "<uuid>" in text and "<serial>" in text
    if fmt == "json":
        json.loads(text)


def test_no_redact_keeps_everything() -> None:
    text = render(planted(), redact=False)
    assert "kowalski" in text and UUID in text and "PN42XQ7" in text


def test_a_huge_snapshot_fits_githubs_limit_and_says_what_was_cut() -> None:
    data = MACHINES["mi300x-x4-rocm6.2"]()
    big = fixture_text("rocm-smi-a-gfx942-mi300x-x4-driver6.7.0.txt") * 60
    data["commands"]["rocm-smi"] = ok(big)
    assert len(big) > 3 * GITHUB_BODY_LIMIT
    text = render(data)
    assert len(text) <= GITHUB_BODY_LIMIT
    assert "_Cut to fit GitHub's 65,536-character limit:" in text
    assert "lines of rocm-smi" in text
    # the count said is the count cut: the lines shown and the lines cut make the section
    [said] = re.findall(r"(\d+) lines of rocm-smi", text)
    def section(report: str, end: str) -> list[str]:
        block = report[report.index("<summary>rocm-smi</summary>"):]
        return block[block.index("```\n") + 4:block.index(end)].splitlines()

    whole = section(render(data, limit=10**9), "```\n\n</details>")
    shown = section(text, f"... ({said} lines cut)")
    assert shown == whole[:len(shown)] and len(shown) + int(said) == len(whole)
    # The header and the problems are never cut.
    assert "| ROCm | 6.2.1 at /opt/rocm (found by /opt/rocm; system packages) |" in text and "**allocator-config**" in text


def test_a_section_of_one_huge_line_is_cut_whole() -> None:
    # one line of 300,000 characters is halved away with the lines after it, and said so
    data = MACHINES["mi300x-x4-rocm6.2"]()
    data["commands"]["rocm-smi"] = ok("x" * 300_000)
    text = render(data)
    assert len(text) <= GITHUB_BODY_LIMIT and "x" * 1000 not in text
    assert "```\n$ rocm-smi\n... (4 lines cut)\n```" in text
    assert "_Cut to fit GitHub's 65,536-character limit: 4 lines of rocm-smi._" in text


def test_the_account_behind_sudo_is_redacted_too(tmp_path: Path) -> None:
    # Run as root through sudo, findings name the account that trains (SUDO_USER).
    import subprocess
    import sys

    data = MACHINES["gfx1150-890m-rocm7.2"]()
    data["user"] = {"name": "root", "uid": 0, "groups": ["root"]}
    data["env"] = {**data["env"], "SUDO_USER": "kowalski", "HOME": "/root"}
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(data))
    host = SnapshotHost(data)
    kfd = next(r for r in run_checks(host, all_checks()).results if r.id == "kfd-access")
    assert "kowalski's access is not tested" in kfd.summary  # the name is there to hide
    for fmt in ("markdown", "text", "json"):
        r = subprocess.run([sys.executable, "-m", "rocmdoctor", "report", "--from", str(snap),
                            "--format", fmt], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr
        assert "kowalski" not in r.stdout and "<redacted>'s access is not tested" in r.stdout


@pytest.mark.parametrize("fmt", ["markdown", "text", "json"])
def test_report_from_the_command_line_hides_the_user_and_host_names(
        tmp_path: Path, fmt: str) -> None:
    """Through the real entry point: `report --from` sets up its own redactor from the
    snapshot's user and host name (a snapshot taken with --no-redact keeps both)."""
    from typer.testing import CliRunner

    from rocmdoctor.cli.app import app
    from rocmdoctor.host.snapshot import save_snapshot

    path = tmp_path / "snap.json"
    save_snapshot(planted(), str(path))
    result = CliRunner().invoke(app, ["report", "--from", str(path), "--format", fmt])
    assert result.exit_code == 0, result.output
    for leak in ("kowalski", "lab-node-17", SECRET):
        assert leak not in result.stdout, leak
    assert "~/miopen on <redacted>" in result.stdout
    kept = CliRunner().invoke(app, ["report", "--from", str(path), "--format", fmt,
                                    "--no-redact"])
    assert "/home/kowalski/miopen on lab-node-17" in kept.stdout
