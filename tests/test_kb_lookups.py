"""The kb/ lookups answer with the numbers of their tables' sources (issue 28: a number or a
key changed in a table is caught)."""

from __future__ import annotations

import pytest

from rocmdoctor.kb import deep_refs, pcie, ppfeatures, rocm_support
from rocmdoctor.kb import hip_builds as hb
from rocmdoctor.kb import torch_wheels as tw


@pytest.mark.parametrize(("gt", "width", "gbps"), [
    (2.5, 16, 4.0), (5.0, 16, 8.0),  # 8b/10b
    (8.0, 16, 15.75), (16.0, 16, 31.51), (32.0, 16, 63.02), (16.0, 4, 7.88),  # 128b/130b
])
def test_pcie_link_rate_after_encoding(gt: float, width: int, gbps: float) -> None:
    assert pcie.link_gbps(gt, width) == gbps


def test_ubuntu_22_04_3_is_listed_with_its_hwe_kernel() -> None:
    # ROCm 6.0.2's system requirements: Ubuntu 22.04.3 with kernel 6.2.
    assert [r.kernels for r in rocm_support.kernels_for("ubuntu", ["22.04.3"])] == [("6.2",)]


def test_the_mi300x_sgemm_pass_mark() -> None:
    ref = deep_refs.class_reference("AMD Instinct MI300X", "gemm:fp32")
    assert ref is not None and (ref.value, ref.unit) == (100.0, "TFLOP/s")
    assert deep_refs.class_reference("AMD Instinct MI300X", "gemm:fp16") is not None
    assert deep_refs.class_reference("AMD Instinct MI300X", "gemm:fp64") is None


def test_torch_2_8_has_its_cuda_12_8_wheels() -> None:
    release = tw.wheel_release("2.8.0")
    assert release is not None and release.cuda == ("12.6", "12.8", "12.9")


def test_undefined_bits_are_reported_only_where_the_default_sets_them() -> None:
    undefined = next(b for b in range(ppfeatures.MASK_BITS)
                     if b not in ppfeatures.FEATURES_BY_BIT)
    flag = 1 << undefined
    default = 0x1  # a default with another bit set, not this one
    assert ppfeatures.diff_from_default(default | flag, default).undefined_cleared == ()
    assert ppfeatures.diff_from_default(0, flag).undefined_cleared == (undefined,)


def test_a_two_part_hip_version_is_its_rocm_release() -> None:
    assert hb.rocm_of_hip("7.2") == "7.2"
    assert hb.rocm_of_hip("7") is None
