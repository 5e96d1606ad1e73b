"""General fixes found while reading the twelfth collection (docs/explain.md), each read from a
real text and from the same text with the one fact that decides it changed."""

from __future__ import annotations

from rocmdoctor.explain import NOT_GPU, UNKNOWN_GPU, diagnose
from tests.explain_replay import host_for, keys, paste

REFUSED = paste("c12-secure-boot-module-refused--ubuntu-535-dkms-key-rejected-second-monitor.txt")


def test_nvidia_smi_without_its_driver_yields_to_the_refusal_that_says_why() -> None:
    assert [k for k, _ in keys(REFUSED)] == ["secure-boot-module-refused"]
    # without modprobe's refusal, nvidia-smi's failure is all the text says
    alone = "\n".join(ln for ln in REFUSED.splitlines() if "Key was rejected" not in ln)
    assert [k for k, _ in keys(alone)] == ["nvidia-smi-no-driver"]


def test_xla_finding_no_gpu_kernel_for_a_custom_call_is_a_gpu_error_even_unknown() -> None:
    text = paste("c12-jax-rocm-plugin-name-mismatch--rocm10-no-ffi-handler-hipsolver.txt")
    result = diagnose(text, host_for("amd"))
    assert (result.verdict, result.explanations) == (UNKNOWN_GPU, [])
    # the same words for a CPU platform are no GPU's
    cpu = "NOT_FOUND: No FFI handler registered for lapack_getrf_ffi on a platform Host"
    assert diagnose(cpu, None).verdict == NOT_GPU
