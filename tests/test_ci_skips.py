"""Under CI a skip of a test whose needs CI installs is a failure (tests/conftest.py), and
.ci/run installs those needs and prints every skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import repo_root

pytestmark = pytest.mark.e2e

CASE = textwrap.dedent("""\
    import shutil

    import pytest


    @pytest.mark.ci_needs("a-tool-nobody-has")
    @pytest.mark.skipif(shutil.which("a-tool-nobody-has") is None, reason="needs a-tool")
    def test_needs_a_tool() -> None:
        pass


    def test_an_optional_one() -> None:
        pytest.skip("optional here")
    """)


def _run(folder: Path, ci: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rsE", "-p", "no:cacheprovider",
                           str(folder)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=folder)


def test_a_skip_of_what_ci_installs_fails_only_under_ci(tmp_path: Path) -> None:
    shutil.copy(Path(repo_root()) / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    ci_needs(what): x\n"
                                         "    e2e: x\n    live: x\n")
    (tmp_path / "test_case.py").write_text(CASE)
    local = _run(tmp_path, "")
    assert local.returncode == 0, local.stdout
    assert "2 skipped" in local.stdout
    ci = _run(tmp_path, "1")
    assert ci.returncode == 1, ci.stdout
    assert "1 skipped, 1 error" in ci.stdout, ci.stdout
    assert ("skipped under CI, which installs a-tool-nobody-has for this test: needs a-tool"
            in ci.stdout), ci.stdout
    assert "SKIPPED [1] test_case.py" in ci.stdout and "optional here" in ci.stdout


def test_ci_installs_the_needs_and_prints_the_skips() -> None:
    text = (Path(repo_root()) / ".ci" / "run").read_text(encoding="utf-8")
    assert "apt-get install -y -qq chromium" in text
    assert "apt-get install -y -qq rocminfo rocm-smi" in text
    lines = text.strip().splitlines()
    assert "export CI=1" in lines
    # the README's test command as written; skips are printed through pytest's addopts
    readme = (Path(repo_root()) / "README.md").read_text(encoding="utf-8")
    assert lines[-1] == "python3 -m pip install torch==2.13.0 -e '.[test]' && python3 -m pytest -q"
    assert f"```sh\n{lines[-1]}\n```" in readme
    pyproject = (Path(repo_root()) / "pyproject.toml").read_text(encoding="utf-8")
    assert "addopts = \"-m 'not gpu' -rsfE\"" in pyproject
