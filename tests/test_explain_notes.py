"""Notes explain derives from the numbers and names in a pasted message, asserted whole."""

from __future__ import annotations

from rocmdoctor.explain import explain_text
from rocmdoctor.explain.reading import LINE_CHARS, lines_of


def _notes(text: str, key: str) -> tuple[str, ...]:
    return next(e.notes for e in explain_text(text) if e.key == key)


def test_the_cuda_version_a_driver_number_stands_for() -> None:
    # The driver reports CUDA as 1000 * major + 10 * minor (12040 is CUDA 12.4).
    text = ("RuntimeError: The NVIDIA driver on your system is too old (found version 12040). "
            "Please update your GPU driver")
    assert _notes(text, "cuda-driver-too-old")[0] == (
        "'found version 12040': this driver supports CUDA 12.4 at most.")


def test_missing_and_bundled_targets_are_listed_once_each_in_order() -> None:
    text = ("Bundled code objects:\n  hipv4-amdgcn-amd-amdhsa--gfx900\n"
            "  hipv4-amdgcn-amd-amdhsa--gfx906\n  hipv4-amdgcn-amd-amdhsa--gfx900\n"
            ":1:hip_code_object.cpp:616 : 1234 us: hipErrorNoBinaryForGpu: Unable to find "
            "code object for all current devices!\n  Devices:\n"
            "    amdgcn-amd-amdhsa--gfx1030 - [Not Found]\n"
            "    amdgcn-amd-amdhsa--gfx1100 - [Not Found]\n")
    assert _notes(text, "no-binary-for-gpu")[0] == (
        "The runtime found no code for gfx1030, gfx1100; the library carries code for "
        "gfx900, gfx906.")


def test_a_line_with_no_end_is_cut_as_it_is_read() -> None:
    # A paste read in chunks never holds more than a few chunks of one endless line.
    chunk = "x" * (LINE_CHARS + 1)
    pieces = list(lines_of([chunk] * 12 + ["\nlast"]))
    assert "".join(pieces[:-1]) == chunk * 12 and pieces[-1] == "last"
    assert max(len(p) for p in pieces) < LINE_CHARS * 4 + len(chunk)


def test_an_unknown_line_is_searched_by_its_first_fourteen_words() -> None:
    from rocmdoctor.explain.unknown import search_text

    words = [f"word{chr(97 + i)}" for i in range(20)]
    assert search_text(" ".join(words)) == " ".join(words[:14])
