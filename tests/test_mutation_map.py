"""scripts/mutation.py's choice of tests for files that run in a child process, whose lines the
coverage map (in-process) never sees."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("mutation_script", ROOT / "scripts" / "mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_child_scripts_are_found_with_the_names_that_point_at_them() -> None:
    mutation = _module()
    files = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "doctor" / "host").glob("*.py"))]
    found = mutation.child_scripts(files)
    assert found["doctor/host/probe_child.py"] == {"probe_child", "CHILD_SCRIPT"}
    assert found["doctor/host/libload_child.py"] == {"libload_child", "LIBLOAD_SCRIPT"}
    assert found["doctor/host/deep_child.py"] == {"deep_child", "DEEP_SCRIPT"}
    # loaded by path by the child scripts: it runs wherever they do
    assert found["doctor/host/child_setup.py"] >= {"child_setup", "probe_child", "CHILD_SCRIPT",
                                                   "libload_child", "deep_child"}
    # a module imported in-process only is no child's
    assert "doctor/host/probe.py" not in found and "doctor/host/live.py" not in found
