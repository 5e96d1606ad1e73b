"""The wheel, HIP, driver, ROCm-release, gfx and CUDA-driver tables agree with each other and
carry sources."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import cuda_driver as cd
from rocmdoctor.kb import driver_support as ds
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb import rocm_support as rs
from rocmdoctor.kb import torch_wheels as tw

# The releases the audit found missing, and every later one AMD published (7.9-7.13
# technology previews, 7.14, 10.0, 10.1).
AUDITED = ("6.1.5", "6.3.2", "6.3.3", "6.4.1", "6.4.4", "7.0.1", "7.2.0", "7.9.0", "7.10.0",
           "7.11.0", "7.12.0", "7.13.0", "7.14.0", "10.0.0", "10.1.0")


def _named_releases() -> set[str]:
    """Every ROCm release any table names."""
    named = {v for r in rs.RELEASES for v in r.versions}
    named |= {v for h in tw.HIP_BUILDS for v in h.releases}
    named |= set(tw.HIP_UNKNOWN) | set(rs.NO_COLUMN)
    named |= {".".join(str(p) for p in r.first) for r in kb_gfx.ROCM_RELEASES}
    return named


def _sources() -> list[str]:
    sources = [r.source for r in (*tw.WHEELS, *tw.HIP_BUILDS, *tw.WHEEL_TARGETS,
                                  *tw.INDEX_TARGETS, *ds.KMD_SUPPORT, *ds.MODULE_RELEASES,
                                  *ds.PREVIEW_DRIVERS, *cd.CUDA_GA_DRIVERS, *cd.MINOR_COMPAT,
                                  *rs.RELEASES, *rs.KERNELS, *kb_gfx.GFX_TARGETS.values(),
                                  *kb_gfx.ROCM_RELEASES)]
    sources += [w.pins_source for w in tw.WHEELS]
    sources += [src for _, _, src in ds.BUNDLED_DRIVERS]
    sources += [src for _, src in cd.KNOWN_WITHOUT_DRIVER]
    sources += [r.source for rules in kb_gfx.OVERRIDE_RULES.values() for r in rules]
    return sources


def test_no_entry_without_a_source() -> None:
    sources = _sources()
    assert len(sources) > 200
    assert all(s.startswith("https://") and " " not in s for s in sources), [
        s for s in sources if not s.startswith("https://")]


def test_kb_date_is_a_date() -> None:
    year, month, day = (int(p) for p in KB_DATE.split("-"))
    assert (year >= 2026, 1 <= month <= 12, 1 <= day <= 31) == (True, True, True)


def test_every_audited_release_is_named() -> None:
    assert set(AUDITED) <= _named_releases()


@pytest.mark.parametrize("release", sorted(_named_releases(), key=rs.version_key))
def test_every_named_release_has_a_support_row_a_hip_number_and_a_gfx_list(release: str) -> None:
    match = rs.release_for(release)
    assert match is not None, release
    assert match.exact or release in rs.NO_COLUMN, release
    assert (any(release in h.releases for h in tw.HIP_BUILDS)
            or release in tw.HIP_UNKNOWN), release
    assert not (any(release in h.releases for h in tw.HIP_BUILDS)
                and release in tw.HIP_UNKNOWN), release
    assert kb_gfx.rocm_native_targets(rs.version_key(release)) is not None, release


def test_every_torch_rows_rocm_variants_have_target_lists() -> None:
    for wheel in tw.WHEELS:
        for rocm in wheel.rocm:
            assert tw.wheel_targets(wheel.torch, rocm) is not None, (wheel.torch, rocm)
    # ...and every target row names a torch release and index that exist.
    for row in tw.WHEEL_TARGETS:
        for minor in row.torch:
            releases = [w for w in tw.WHEELS if ".".join(w.torch.split(".")[:2]) == minor]
            assert releases, row
            assert all(set(row.rocm) & set(w.rocm) for w in releases), row


def test_index_targets_are_the_newest_wheels_of_each_index() -> None:
    assert [r.rocm for r in tw.INDEX_TARGETS][-1] == tw.rocm_indexes()[-1]
    for row in tw.INDEX_TARGETS:
        newest = max((w for w in tw.WHEELS if row.rocm in w.rocm),
                     key=lambda w: tw.version_tuple(w.torch))
        assert tw.wheel_targets(newest.torch, row.rocm).targets == row.targets, row.rocm


def _gfx_named() -> set[str]:
    named = {g for row in tw.WHEEL_TARGETS for g in row.targets}
    named |= {g for row in kb_gfx.ROCM_RELEASES for g in row.targets}
    named |= set(kb_gfx.OVERRIDE_RULES)
    named |= {r.target for rules in kb_gfx.OVERRIDE_RULES.values() for r in rules}
    return named


def test_every_gfx_target_has_a_family() -> None:
    for gfx in _gfx_named() | set(kb_gfx.GFX_TARGETS):
        assert gfx in kb_gfx.GFX_TARGETS, gfx
        assert kb_gfx.family_of(gfx) is not None, gfx
        assert kb_gfx.isa_group(gfx) is not None, gfx


def test_llvm_generic_families() -> None:
    # gfx9-4-generic holds gfx942 and gfx950; gfx908 and gfx90a are in no generic family.
    assert {g for g, t in kb_gfx.GFX_TARGETS.items() if t.isa_group == "gfx9-4"} == {
        "gfx940", "gfx941", "gfx942", "gfx950"}
    assert kb_gfx.isa_group("gfx908") == "gfx908" and kb_gfx.isa_group("gfx90a") == "gfx90a"
    assert kb_gfx.family_of("gfx1250") == "CDNA5" and not kb_gfx.is_apu("gfx1250")


def test_every_module_number_maps_to_a_user_space_window() -> None:
    rows = {r.kmd for r in ds.KMD_SUPPORT}
    for module in ds.MODULE_RELEASES:
        assert module.driver in rows or module.driver in ds.UNLISTED_DRIVERS, module
    for _, driver, _ in ds.BUNDLED_DRIVERS:
        assert driver in rows
    for release in (v for r in rs.RELEASES for v in r.versions):
        if (6, 0, 0) <= rs.version_key(release) <= (7, 2, 99):
            driver = ds.driver_of_rocm(release)
            assert driver is not None and ds.kmd_row(driver) is not None, release
            # A driver supports the user space it came with.
            assert ds.kmd_supports(driver, release) is True, release
    # Module numbers grow with the driver releases.
    ordered = sorted(ds.MODULE_RELEASES, key=lambda r: ds.version_numbers(r.module))
    assert [ds.version_numbers(r.driver) for r in ordered] == sorted(
        ds.version_numbers(r.driver) for r in ordered)


def test_every_user_space_in_the_driver_table_is_a_known_release() -> None:
    minors = {tuple(rs.version_key(v)[:2]) for r in rs.RELEASES for v in r.versions}
    for row in ds.KMD_SUPPORT:
        for user in row.user_space:
            if ds.version_numbers(user) >= (6, 0):
                assert ds.version_numbers(user)[:2] in minors, (row.kmd, user)


def test_preview_user_space_is_judged_by_its_own_notes() -> None:
    assert ds.kmd_verdict("30.20", "7.10").tested is True
    assert ds.kmd_verdict("30.30", "7.10").tested is False
    assert ds.kmd_verdict("30.30", "7.12").basis == "user-preview"


def test_the_driver_table_follows_amds_current_rows() -> None:
    # "6.4.x", "6.1.x, 6.2.x, 6.3.x, 6.4.x, 7.0.x, 7.1.x, 7.2.x"; "6.2.x", "6.0.x ... 7.0.x";
    # "6.3.x", "6.1.x ... 7.0.x" (not 7.1 or 7.2); "30.10.x" from 6.2 to 10.0.0.
    assert ds.kmd_supports("6.4.3", "7.2") is True
    assert ds.kmd_supports("6.2.4", "7.0") is True
    assert ds.kmd_supports("6.3.4", "7.1") is False
    assert ds.kmd_supports("30.10", "10.0") is True
    assert ds.kmd_supports("31.50", "6.4") is False
    assert ds.kmd_verdict("32.10", "10.0").basis == "driver-newer"
    assert ds.kmd_verdict("31.30", "7.13").basis == "user-preview"
    assert ds.kmd_verdict("31.30", "7.2").basis == "driver-unlisted"
    # The 10.0.0 and 10.1.0 release notes' table (driver-firmware-support.yaml) names the
    # 31.10-31.30 previews the matrix rows leave out, and covers 10.1.
    for driver in ("31.50", "31.40", "31.30", "31.20", "31.10", "30.30", "30.20", "30.10"):
        for user in ("10.0", "10.1"):
            assert ds.kmd_verdict(driver, user) == ds.KmdVerdict(
                True, "release-notes", ds.RELEASE_NOTE_DRIVERS[0].drivers,
                ds.DRIVER_FIRMWARE_YAML), (driver, user)
    assert ds.kmd_verdict("6.4", "10.1").tested is False
    assert ds.kmd_verdict("31.50", "10.2").basis == "user-newer"


def test_unverified_cuda_rows_are_marked() -> None:
    assert [r.cuda for r in cd.CUDA_GA_DRIVERS if not r.verified] == ["13.3", "13.2"]
    assert cd.cuda_newer_than_table("13.4") and not cd.cuda_newer_than_table("13.3")


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
    # Up to 7.14 HIP's major.minor is ROCm's; ROCm 10.0 ships HIP 7.15, 10.1 HIP 7.16.
    for row in tw.HIP_BUILDS:
        minor = tw.version_tuple(row.hip)[:2]
        if minor <= (7, 14):
            assert all(tw.version_tuple(r)[:2] == minor for r in row.releases), row
        else:
            assert all(tw.version_tuple(r)[0] >= 10 for r in row.releases), row
            assert tw.rocm_of_hip(row.hip) == ".".join(row.releases[0].split(".")[:2])


def test_wheel_rocm_variants_have_a_hip_build_for_their_release() -> None:
    # Every ROCm minor release torch ships wheels for from 6.0 on is known to the HIP table.
    known = {tw.version_tuple(r)[:2] for h in tw.HIP_BUILDS for r in h.releases}
    for index in tw.rocm_indexes():
        v = tw.version_tuple(index)[:2]
        if v >= (6, 0):
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
        # RDNA4 and gfx1101 came with 6.4.1; PyTorch's build script has no gfx1152/gfx1153.
        left_out = {"gfx1101", "gfx1200", "gfx1201", "gfx1152", "gfx1153"}
        assert official.targets - left_out <= set(row.targets), row


def test_cuda_table_is_newest_first_and_covers_every_wheel_cuda() -> None:
    versions = [tw.version_tuple(r.cuda) for r in cd.CUDA_GA_DRIVERS]
    assert versions == sorted(versions, reverse=True)
    for row in tw.WHEELS:
        for cuda in row.cuda:
            assert cd.ga_driver(cuda) is not None, (row.torch, cuda)
            assert cd.minor_compat_driver(cuda) is not None


def test_minor_compat_driver_is_never_newer_than_the_ga_driver() -> None:
    # Table 2's footnote: "CUDA 11.0 was released with an earlier driver version" (its GA
    # needs 450.51.05; minor version compatibility 450.80.02).
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
    ("6.1.40093-bd86f1708", ("6.1.2", "6.1.3", "6.1.5")),
    ("7.15.26333-0000000", ("10.0.0",)),
    ("7.2.53211", ("7.2.1", "7.2.2", "7.2.3", "7.2.4")),
])
def test_hip_build_lookup(hip: str, releases: tuple[str, ...]) -> None:
    row = tw.hip_build(hip)
    assert row is not None and row.releases == releases


def test_hip_build_unknown_falls_back_to_minor() -> None:
    # A 7.13 nightly's HIP: not a release build.
    assert tw.hip_build("7.13.26162-1140233ffe") is None
    assert tw.rocm_of_hip("7.13.26162-1140233ffe") == "7.13"
    # A HIP past the tables: its ROCm release is unknown (10.0 shipped HIP 7.15).
    assert tw.rocm_of_hip("7.17.1") is None
    assert tw.rocm_of_hip("7.16.26385") == "10.1"


def test_kmd_support_table() -> None:
    assert tw.kmd_supports("6.2.4", "6.4") is True
    assert tw.kmd_supports("6.0.2", "6.4") is False
    assert tw.kmd_supports("7.2.0", "7.2") is None  # not a driver release: 7.2 came with 30.30


def test_the_release_that_added_a_target_to_an_index() -> None:
    # pytorch#179653 added gfx1103 to the wheel arch list for torch 2.13 (rocm7.1 and 7.2).
    assert tw.added_on_index("gfx1103", "7.1") == tw.wheel_release("2.13.0")
    assert tw.added_on_index("gfx1201", "6.2.4") == tw.wheel_release("2.7.0")
    assert tw.added_on_index("gfx1201", "6.3") is None  # every rocm6.3 wheel has it


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
    ds.module_release(text)
    ds.module_newer_than_known(text)
    ds.driver_of_rocm(text)
    ds.kmd_verdict(text, text)
    tw.torch_newer_than_known(text)
    cd.cuda_newer_than_table(text)
    rs.newer_than_known(text)
    tw.version_tuple(text)
    tw.split_local(text)
    tw.hip_build(text)
    tw.rocm_of_hip(text)
    tw.expected_torchvision_minor(text)
    tw.wheel_release(text)
    cd.ga_driver(text)
    cd.minor_compat_driver(text)
