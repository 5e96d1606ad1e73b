from __future__ import annotations

import json

from rocmdoctor.model import CheckResult, Finding, Fix, Report, Status
from rocmdoctor.render.check_json import render_json
from rocmdoctor.render.terminal import render_lines, render_terminal

REPORT = Report(
    tool_version="0.1.0",
    platform="rocm",
    results=(
        CheckResult("os-release", "Distribution", Status.PASS, "Ubuntu 22.04.5 LTS",
                    duration_ms=1),
        CheckResult(
            "kfd-access", "GPU device access (/dev/kfd, /dev/dri)", Status.FAIL,
            "alice cannot open /dev/kfd (group render, mode 0660)",
            findings=(Finding.error("alice is not in group render"),),
            fix=Fix("Add your user to the render and video groups, then log in again.",
                    ("sudo usermod -aG render,video $USER",), needs_root=True,
                    needs_relogin=True),
            source="https://rocm.docs.amd.com/projects/install-on-linux/en/latest/",
            duration_ms=3, depends=("amdgpu-driver",),
        ),
        CheckResult("debug-env", "Debugging variables", Status.WARN,
                    "HIP_LAUNCH_BLOCKING set: GPU work runs slower",
                    fix=Fix("Unset it.", ("unset HIP_LAUNCH_BLOCKING",)), duration_ms=0),
        CheckResult("perf-level", "Power policy", Status.SKIP, "no AMD GPU"),
        CheckResult("gpu-agents", "GPU agents", Status.ERROR,
                    "rocminfo did not answer within 10 s", duration_ms=10000),
    ),
)


def test_terminal_rendering_is_exact() -> None:
    assert render_terminal(REPORT, width=100) == (
        "rocmdoctor 0.1.0 · platform: rocm\n"
        "\n"
        "[✓] os-release  Ubuntu 22.04.5 LTS\n"
        "[✗] kfd-access  alice cannot open /dev/kfd (group render, mode 0660)\n"
        "[!] debug-env   HIP_LAUNCH_BLOCKING set: GPU work runs slower\n"
        "[-] perf-level  no AMD GPU\n"
        "[E] gpu-agents  rocminfo did not answer within 10 s\n"
        "\n"
        "How to fix (in this order):\n"
        "  1. kfd-access: Add your user to the render and video groups, then log in again. (needs root, then\n"
        "     log in again)\n"
        "       $ sudo usermod -aG render,video $USER\n"
        "  2. debug-env: Unset it.\n"
        "       $ unset HIP_LAUNCH_BLOCKING\n"
        "  3. gpu-agents: no fix is known; this shows what it found:\n"
        "       $ rocmdoctor check -v --only gpu-agents\n"
        "\n"
        "1 passed, 1 warning, 1 failed, 1 skipped, 1 error\n"
    )


def test_quiet_prints_only_the_problems_and_their_fixes() -> None:
    assert render_terminal(REPORT, width=100, quiet=True) == (
        "[✗] kfd-access  alice cannot open /dev/kfd (group render, mode 0660)\n"
        "[!] debug-env   HIP_LAUNCH_BLOCKING set: GPU work runs slower\n"
        "[E] gpu-agents  rocminfo did not answer within 10 s\n"
        "\n"
        "How to fix (in this order):\n"
        "  1. kfd-access: Add your user to the render and video groups, then log in again. (needs root, then\n"
        "     log in again)\n"
        "       $ sudo usermod -aG render,video $USER\n"
        "  2. debug-env: Unset it.\n"
        "       $ unset HIP_LAUNCH_BLOCKING\n"
        "  3. gpu-agents: no fix is known; this shows what it found:\n"
        "       $ rocmdoctor check -v --only gpu-agents\n"
    )
    calm = Report("0.1.0", "rocm", (REPORT.results[0], REPORT.results[3]))
    assert render_terminal(calm, quiet=True) == ""


PIP = ("pip install --force-reinstall torch torchvision --index-url "
       "https://download.pytorch.org/whl/rocm6.2.4")


def test_commands_are_never_broken_and_prose_wraps_with_a_hanging_indent() -> None:
    long_fix = CheckResult(
        "torch-install", "PyTorch", Status.FAIL,
        "torch 2.5.1+cu124 is a CUDA build on an AMD machine (amdgpu driver loaded, /dev/kfd)",
        fix=Fix("Install the ROCm build of PyTorch with the pip of /home/alice/venvs/train/bin/"
                "python (rocm6.2.4: the newest wheel for ROCm 6.2), then run "
                "`rocmdoctor check --only torch-install` again.", (PIP,)))
    text = render_terminal(Report("0.1.0", "rocm", (long_fix,)), width=60)
    lines = text.splitlines()
    assert f"       $ {PIP}" in lines  # whole, although wider than 60 columns
    assert lines[2:4] == ["[✗] torch-install  torch 2.5.1+cu124 is a CUDA build on an",
                          "                   AMD machine (amdgpu driver loaded,"]
    fix_at = lines.index("How to fix (in this order):")
    assert lines[fix_at + 1].startswith("  1. torch-install: Install the ROCm build")
    prose = lines[fix_at + 1:lines.index(f"       $ {PIP}")]
    assert all(len(line) <= 60 or " " not in line.strip() for line in prose), prose
    assert all(line.startswith("     ") for line in prose[1:])  # the hanging indent
    # A command quoted in the prose stays on one line.
    assert any("`rocmdoctor check --only torch-install`" in line for line in prose), prose


def test_fixes_come_prerequisites_first() -> None:
    """A fix a later check depends on comes first; a failure that others were skipped for
    comes before unrelated ones; otherwise registry order."""
    def fail(check_id: str, depends: tuple[str, ...] = (), status: Status = Status.FAIL,
             fix: bool = True, root: str | None = None) -> CheckResult:
        return CheckResult(check_id, check_id, status, f"{check_id} is wrong",
                           fix=Fix(f"Fix {check_id}.", (f"fix-{check_id}",)) if fix else None,
                           depends=depends, root_cause=root)

    results = (
        fail("debug-env", status=Status.WARN),
        fail("torch-device", depends=("torch-install",)),  # after its prerequisite, below
        fail("torch-install", depends=("kfd-access",), status=Status.WARN),
        fail("gpu-agents", depends=("kfd-access",), status=Status.SKIP, fix=False,
             root="kfd-access"),
        fail("kfd-access", depends=("amdgpu-driver",)),
        fail("perf-level", status=Status.WARN, fix=False),  # a warning with nothing to do
    )
    text = render_terminal(Report("0.1.0", "rocm", results), width=100)
    steps = [ln.split(":")[0].strip() for ln in text.splitlines() if ln[:5].strip().endswith(".")]
    assert steps == ["1. kfd-access", "2. debug-env", "3. torch-install", "4. torch-device"]


def test_verbose_adds_findings_sources_and_durations() -> None:
    text = render_terminal(REPORT, verbose=True, width=120)
    assert "[✗] kfd-access  alice cannot open /dev/kfd (group render, mode 0660)  (3 ms)\n" in text
    assert "                error: alice is not in group render\n" in text
    assert ("                source: https://rocm.docs.amd.com/projects/install-on-linux/en/"
            "latest/\n") in text
    assert "[E] gpu-agents  rocminfo did not answer within 10 s  (10000 ms)\n" in text


def test_colour_only_when_asked() -> None:
    assert "\x1b[" not in render_terminal(REPORT)
    assert "\x1b[" in render_terminal(REPORT, color=True)


def test_json_follows_the_contract_exactly() -> None:
    data = json.loads(render_json(REPORT))
    assert list(data) == ["schema", "tool_version", "platform", "summary", "checks"]
    assert data["schema"] == "rocmdoctor.check/1"
    assert data["summary"] == {"pass": 1, "warn": 1, "fail": 1, "skip": 1, "error": 1}
    assert data["checks"][1] == {
        "id": "kfd-access",
        "title": "GPU device access (/dev/kfd, /dev/dri)",
        "status": "fail",
        "summary": "alice cannot open /dev/kfd (group render, mode 0660)",
        "findings": [{"severity": "error", "text": "alice is not in group render"}],
        "fix": {"text": "Add your user to the render and video groups, then log in again.",
                "commands": ["sudo usermod -aG render,video $USER"],
                "needs_root": True, "needs_relogin": True},
        "source": "https://rocm.docs.amd.com/projects/install-on-linux/en/latest/",
        "duration_ms": 3,
        "depends": ["amdgpu-driver"],  # added to the contract: the check's prerequisites
        "root_cause": None,  # added: the failed check a skipped check follows from
    }
    assert data["checks"][0]["fix"] is None


def test_skips_that_follow_from_one_failure_name_it_once() -> None:
    kfd = REPORT.results[1]
    followers = (
        CheckResult("gpu-agents", "GPU agents", Status.SKIP,
                    "needs kfd-access, which failed", depends=("kfd-access",),
                    root_cause="kfd-access"),
        CheckResult("torch-device", "Devices", Status.SKIP,
                    "needs gpu-agents, which was not run because kfd-access failed",
                    depends=("gpu-agents",), root_cause="kfd-access"),
    )
    report = Report("0.1.0", "rocm", (kfd, *followers))
    text = render_terminal(report, width=100)
    assert text.endswith(
        "[-] gpu-agents    needs kfd-access, which failed\n"
        "[-] torch-device  needs gpu-agents, which was not run because kfd-access failed\n"
        "\n"
        "not run because kfd-access failed: gpu-agents, torch-device (fix kfd-access first)\n"
        "\n"
        "How to fix (in this order):\n"
        "  1. kfd-access: Add your user to the render and video groups, then log in again. (needs root, then\n"
        "     log in again)\n"
        "       $ sudo usermod -aG render,video $USER\n"
        "\n"
        "0 passed, 0 warnings, 1 failed, 2 skipped, 0 errors\n")
    assert json.loads(render_json(report))["checks"][2]["root_cause"] == "kfd-access"
    # a line too long for the terminal goes on indented by two, never cut
    narrow = render_terminal(report, width=50)
    assert ("not run because kfd-access failed: gpu-agents,\n"
            "  torch-device (fix kfd-access first)\n") in narrow


def test_the_header_line_is_bold() -> None:
    report = Report(tool_version="0.1.0", platform="rocm", results=(
        CheckResult("kfd-access", "KFD access", Status.PASS, "ok"),))
    lines = render_lines(report)
    assert (lines[0].plain, lines[0].style) == ("rocmdoctor 0.1.0 · platform: rocm", "bold")


def test_colours_of_the_marks_headings_and_commands() -> None:
    """In colour: each mark in its colour (a skip dim), headings bold, commands cyan, the
    wrapped rest of a fix plain."""
    assert render_terminal(REPORT, color=True) == (
        "\x1b[1mrocmdoctor 0.1.0 · platform: rocm\x1b[0m\n\n"
        "\x1b[32m[✓]\x1b[0m os-release  Ubuntu 22.04.5 LTS\n"
        "\x1b[31m[✗]\x1b[0m kfd-access  alice cannot open /dev/kfd (group render, mode 0660)\n"
        "\x1b[33m[!]\x1b[0m debug-env   HIP_LAUNCH_BLOCKING set: GPU work runs slower\n"
        "\x1b[2m[-]\x1b[0m perf-level  no AMD GPU\n"
        "\x1b[35m[E]\x1b[0m gpu-agents  rocminfo did not answer within 10 s\n\n"
        "\x1b[1mHow to fix (in this order):\x1b[0m\n"
        "\x1b[1m  1. kfd-access: Add your user to the render and video groups, then log in "
        "again. (needs root, then\x1b[0m\n"
        "     log in again)\n"
        "\x1b[36m       $ sudo usermod -aG render,video $USER\x1b[0m\n"
        "\x1b[1m  2. debug-env: Unset it.\x1b[0m\n"
        "\x1b[36m       $ unset HIP_LAUNCH_BLOCKING\x1b[0m\n"
        "\x1b[1m  3. gpu-agents: no fix is known; this shows what it found:\x1b[0m\n"
        "\x1b[36m       $ rocmdoctor check -v --only gpu-agents\x1b[0m\n\n"
        "\x1b[1m1 passed, 1 warning, 1 failed, 1 skipped, 1 error\x1b[0m\n")
