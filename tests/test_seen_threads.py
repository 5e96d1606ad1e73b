"""scripts/seen_threads.py: the threads a new collection of pastes must skip."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "seen_threads.py"


def _module() -> object:
    spec = importlib.util.spec_from_file_location("seen_threads", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_threads_cited_anywhere_are_listed_in_both_spellings_of_a_renamed_repo(
        tmp_path: Path) -> None:
    (tmp_path / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "doctor").mkdir()
    (tmp_path / "tests" / "fixtures" / "a.txt").write_text(
        "# source: https://github.com/ROCm/TheRock/issues/1054 (x)\n", encoding="utf-8")
    (tmp_path / "doctor" / "kb.py").write_text(
        'ROCM_2153 = "https://github.com/ROCm/ROCm/issues/2153"\n'
        "# see https://github.com/pytorch/pytorch/pull/76141#issuecomment-1\n",
        encoding="utf-8")
    assert sorted(_module().threads(tmp_path)) == [  # type: ignore[attr-defined]
        "https://github.com/ROCm/ROCm/issues/2153",
        "https://github.com/ROCm/TheRock/issues/1054",
        "https://github.com/ROCm/legacy-rocm-build/issues/2153",
        "https://github.com/pytorch/pytorch/pull/76141",
    ]
