"""The wheel, HIP, gfx and CUDA-driver tables agree with each other and carry sources."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.kb import cuda_driver as cd
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb import torch_wheels as tw


def test_every_row_has_a_source_url() -> None:
    rows = [*tw.WHEELS, *tw.HIP_BUILDS, *tw.INDEX_TARGETS, *tw.KMD_SUPPORT,
            *cd.CUDA_GA_DRIVERS, *cd.MINOR_COMPAT]
    assert rows
    assert all(r.source.startswith("https://") for r in rows)


def test_wheel_table_is_sorted_and_unique() -> None:
    versions = [tw.version_tuple(r.torch) for r in tw.WHEELS]
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)


def test_torchvision_minor_is_torch_minor_plus_15_from_2_1_on() -> None:
    for row in tw.WHEELS:
        if tw.version_tuple(row.torch) >= (2, 1):
            assert tw.version_tuple(row.torchvision)[:2] == tw.expected_torchvision_minor(
                row.torch), row
    # 2.0.x is the exception the README table shows: 2.0.0 -> 0.15.1, 2.0.1 -> 0.15.2
    assert tw.wheel_release("2.0.0") is not None
    assert tw.wheel_release("2.0.0").torchvision == "0.15.1"


def test_every_torchvision_pins_a_torch_with_a_wheel_row() -> None:
    for row in tw.WHEELS:
        assert tw.torch_for_torchvision(row.torchvision) == row.torch
        assert tw.wheel_release(row.torch) is row


def test_every_rocm_index_with_targets_is_a_wheel_index() -> None:
    indexes = set(tw.rocm_indexes())
    assert {r.rocm for r in tw.INDEX_TARGETS} <= indexes


def test_hip_builds_map_to_their_own_minor_release() -> None:
    for row in tw.HIP_BUILDS:
        minor = tw.version_tuple(row.hip)[:2]
        assert all(tw.version_tuple(r)[:2] == minor for r in row.releases), row


def test_wheel_rocm_variants_have_a_hip_build_or_a_kmd_row_for_their_release() -> None:
    # Every ROCm minor release torch ships wheels for from 6.0 on is known to the HIP table.
    known = {tw.version_tuple(h.hip)[:2] for h in tw.HIP_BUILDS}
    for index in tw.rocm_indexes():
        v = tw.version_tuple(index)[:2]
        if (6, 0) <= v <= (7, 2):
            assert v in known, index


def test_index_targets_are_gfx_names_known_to_the_gfx_table() -> None:
    for row in tw.INDEX_TARGETS:
        for target in row.targets:
            assert kb_gfx.is_gfx_name(target)
            assert kb_gfx.family_of(target) is not None, target


def test_rocm_releases_in_official_lists_are_compiled_into_that_index() -> None:
    # Every target AMD lists as supported by ROCm X.Y is in the torch wheels for rocmX.Y.
    for row in tw.INDEX_TARGETS:
        official = kb_gfx.rocm_native_targets(tw.version_tuple(row.rocm + ".0")[:3])
        if official is None:
            continue
        assert official.targets - {"gfx1101", "gfx1200", "gfx1201"} <= set(row.targets), row


def test_cuda_table_is_newest_first_and_covers_every_wheel_cuda() -> None:
    versions = [tw.version_tuple(r.cuda) for r in cd.CUDA_GA_DRIVERS]
    assert versions == sorted(versions, reverse=True)
    for row in tw.WHEELS:
        for cuda in row.cuda:
            assert cd.ga_driver(cuda) is not None, (row.torch, cuda)
            assert cd.minor_compat_driver(cuda) is not None


def test_minor_compat_driver_is_never_newer_than_the_ga_driver() -> None:
    # Table 2's footnote: "CUDA 11.0 was released with an earlier driver version" (450.36.06).
    for row in cd.CUDA_GA_DRIVERS:
        minor = cd.minor_compat_driver(row.cuda)
        if minor is not None and row.cuda != "11.0":
            assert cd.driver_at_least(row.min_driver, minor.min_driver), row


@pytest.mark.parametrize(("system", "index"), [
    ("6.3.4", "6.3"), ("6.2.4", "6.2.4"), ("6.2.1", "6.2"), ("7.2.1", "7.2"),
    ("5.7.1", "5.7"), ("7.14.0", "7.14"), ("6.0.2", "6.0"), ("5.0.0", "5.4.2"),
    (None, "7.14"),
])
def test_rocm_index_for_system_release(system: str, index: str) -> None:
    assert tw.rocm_index_for(system) == index


@pytest.mark.parametrize(("hip", "releases"), [
    ("6.2.41133-dd7f95766", ("6.2.0",)),
    ("7.2.26015-fc0010cf6a", ("7.2.0",)),
    ("6.1.40093-bd86f1708", ("6.1.2", "6.1.3")),
    ("7.2.53211", ("7.2.1", "7.2.2", "7.2.3", "7.2.4")),
])
def test_hip_build_lookup(hip: str, releases: tuple[str, ...]) -> None:
    row = tw.hip_build(hip)
    assert row is not None and row.releases == releases


def test_hip_build_unknown_falls_back_to_minor() -> None:
    assert tw.hip_build("7.14.60850") is None
    assert tw.rocm_of_hip("7.14.60850") == "7.14"


def test_kmd_support_table() -> None:
    assert tw.kmd_supports("6.2.4", "6.4") is True
    assert tw.kmd_supports("6.0.2", "6.4") is False
    assert tw.kmd_supports("7.2.0", "7.2") is None


def test_first_index_with_target() -> None:
    row = tw.first_index_with("gfx1150")
    assert row is not None and row.rocm == "7.2"
    assert tw.first_index_with("gfx1103") is None


def test_cuda_driver_lookups() -> None:
    assert cd.ga_driver("12.8").min_driver == "570.26"
    assert cd.ga_driver("12.4.1").min_driver == "550.54.14"
    assert cd.minor_compat_driver("13.0").min_driver == "580"
    assert cd.driver_at_least("570.133.20", "570.26")
    assert not cd.driver_at_least("550.127.08", "570.26")
    assert cd.newest_cuda_for_driver("550.127.08", ("12.6", "13.0", "13.2")) == "12.6"
    assert cd.newest_cuda_for_driver("580.95.05", ("12.6", "13.0")) == "13.0"
    assert cd.newest_cuda_for_driver("470.82.01", ("12.6",)) is None


@given(st.text())
def test_version_helpers_never_raise(text: str) -> None:
    tw.version_tuple(text)
    tw.split_local(text)
    tw.hip_build(text)
    tw.rocm_of_hip(text)
    tw.expected_torchvision_minor(text)
    tw.wheel_release(text)
    cd.ga_driver(text)
    cd.minor_compat_driver(text)
