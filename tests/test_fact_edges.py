"""Fact readers at the edges their callers rely on: where a loaded library comes from, and
pasted tool output inside Markdown fences."""

from __future__ import annotations

import pytest

from rocmdoctor.facts.libload import BOUND, SDK, SYSTEM, TORCH, origin_of
from rocmdoctor.facts.rocminfo import clean

SDK_LIB = "/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib"


@pytest.mark.parametrize(("path", "origin"), [
    ("/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so", TORCH),
    (f"{SDK_LIB}/libamdhip64.so.7", SDK),
    ("/opt/rocm/lib/libamdhip64.so.6", SYSTEM),
    ("/.singularity.d/libs/libhsa-runtime64.so.1", BOUND),
])
def test_the_origin_of_a_loaded_library(path: str, origin: str) -> None:
    assert origin_of(path, "/venv/lib/python3.12/site-packages/torch/lib/", (SDK_LIB + "/",),
                     None) == origin


@pytest.mark.parametrize("fence", ["```", "```console", "```text", "```shell-session"])
def test_fence_lines_with_a_language_tag_are_dropped(fence: str) -> None:
    assert clean(f"{fence}\nAgent 1\n  Name: gfx1100\n```\n") == "Agent 1\n  Name: gfx1100\n"
