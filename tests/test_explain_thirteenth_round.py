"""General fixes found while reading the thirteenth collection (docs/explain.md), each read from a
real text and from the same text with the one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose, explain_text
from tests.explain_replay import host_for, keys, paste


def test_a_gpu_group_the_image_does_not_have_is_passed_by_number() -> None:
    text = paste("c13-container-render-group-missing--odysseus-compose-amd-render-gid.txt")
    [e] = explain_text(text, host_for("amd-container"))
    assert (e.key, e.confidence) == ("container-group-name-missing", "likely")
    assert ("docker run --device=/dev/kfd --device=/dev/dri --group-add $(stat -c %g /dev/kfd) "
            "--group-add $(stat -c %g /dev/dri/renderD128) <image>") in e.fix.commands
    # another group the image lacks is no GPU's
    assert keys("Unable to find group docker: no matching entries in group file") == []


def test_windows_refusing_a_gpu_librarys_folder_is_a_gpu_error_even_unknown() -> None:
    text = paste("c13-ctranslate2-rocm-dll-path-on-nvidia--ct2-470-windows-import-winerror3.txt")
    result = diagnose(text, None)
    assert (result.verdict, result.explanations) == (UNKNOWN_GPU, [])
    other = r"[WinError 3] The system cannot find the path specified: 'C:\data\images'"
    assert diagnose(other, None).verdict == NOT_GPU
