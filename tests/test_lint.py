"""The code stays clean under ruff and mypy (the configuration is in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.helpers import repo_root

pytestmark = pytest.mark.e2e


def test_ruff_is_clean() -> None:
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=repo_root(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_mypy_is_clean_over_the_installed_layout() -> None:
    r = subprocess.run(["bash", "scripts/typecheck.sh"], cwd=repo_root(), capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found" in r.stdout
