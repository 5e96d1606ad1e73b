"""Invariants every row of the kb/ tables keeps, whatever its numbers (issue 28): a minimum
driver never falls as the version it serves rises, a build number never goes back within its
release line, an integrated-GPU flag agrees with the products named beside it, and every
release any table names has the rows the checks look up for it."""

from __future__ import annotations

import re

import pytest

from rocmdoctor.kb import cuda_driver as cd
from rocmdoctor.kb import driver_support as ds
from rocmdoctor.kb import gfx as kb_gfx
from rocmdoctor.kb import hip_builds as hb
from rocmdoctor.kb import rocm_support as rs
from rocmdoctor.kb import torch_wheels as tw


def _v(text: str) -> tuple[int, ...]:
    return tw.version_tuple(text)


# --- minimum drivers ----------------------------------------------------------------------
def test_cuda_ga_driver_never_falls_as_cuda_rises() -> None:
    rows = sorted(cd.CUDA_GA_DRIVERS, key=lambda r: _v(r.cuda))
    for older, newer in zip(rows, rows[1:]):
        assert _v(newer.min_driver) > _v(older.min_driver), (older, newer)


def test_minor_compat_driver_never_falls_as_cuda_major_rises() -> None:
    rows = sorted(cd.MINOR_COMPAT, key=lambda r: r.cuda_major)
    for older, newer in zip(rows, rows[1:]):
        assert _v(newer.min_driver) > _v(older.min_driver), (older, newer)
    # ...and each major's Table 2 minimum is met by the GA driver of its newest minor.
    for row in rows:
        newest = max((r for r in cd.CUDA_GA_DRIVERS if _v(r.cuda)[0] == row.cuda_major),
                     key=lambda r: _v(r.cuda))
        assert cd.driver_at_least(newest.min_driver, row.min_driver), (row, newest)


def test_a_newer_driver_never_serves_an_older_newest_cuda() -> None:
    # Through the lookup the checks use: raising the driver never lowers the CUDA it serves.
    candidates = tuple(r.cuda for r in cd.CUDA_GA_DRIVERS)
    drivers = sorted({r.min_driver for r in (*cd.CUDA_GA_DRIVERS, *cd.MINOR_COMPAT)}, key=_v)
    served = [cd.newest_cuda_for_driver(d, candidates) for d in drivers]
    keys = [_v(s) if s else () for s in served]
    assert keys == sorted(keys), list(zip(drivers, served))
    assert served[-1] == max(candidates, key=_v)


def test_amdgpu_module_number_rises_with_the_driver_release() -> None:
    rows = sorted(ds.MODULE_RELEASES, key=lambda r: _v(r.driver))
    for older, newer in zip(rows, rows[1:]):
        assert _v(newer.module) > _v(older.module), (older, newer)
    assert [_v(r.module) for r in ds.MODULE_RELEASES] == sorted(
        _v(r.module) for r in ds.MODULE_RELEASES)


def test_each_driver_row_supports_a_window_that_never_moves_back() -> None:
    # AMD's table, newest driver first: the oldest and the newest user space a driver
    # supports never fall as the driver rises.
    rows = sorted(ds.KMD_SUPPORT, key=lambda r: _v(r.kmd))
    for older, newer in zip(rows, rows[1:]):
        assert min(map(_v, newer.user_space)) >= min(map(_v, older.user_space)), (older, newer)
        assert max(map(_v, newer.user_space)) >= max(map(_v, older.user_space)), (older, newer)


# --- build numbers --------------------------------------------------------------------------
def _release_lines() -> dict[tuple[int, ...], list[hb.HipBuild]]:
    lines: dict[tuple[int, ...], list[hb.HipBuild]] = {}
    for row in hb.HIP_BUILDS:
        lines.setdefault(_v(row.hip)[:2], []).append(row)
    return lines


@pytest.mark.parametrize("line", sorted(_release_lines()), ids=lambda t: f"{t[0]}.{t[1]}")
def test_hip_build_number_increases_within_its_release_line(line: tuple[int, int]) -> None:
    rows = sorted(_release_lines()[line], key=lambda r: min(map(_v, r.releases)))
    for older, newer in zip(rows, rows[1:]):
        assert _v(newer.hip) >= _v(older.hip), (older.hip, older.releases, newer.hip,
                                                 newer.releases)
        if newer.hip == older.hip:
            continue
        # A new build number serves only releases after every one of the older build.
        assert min(map(_v, newer.releases)) > max(map(_v, older.releases)), (older, newer)


def test_hip_table_lists_releases_in_order_and_each_once() -> None:
    releases = [r for row in hb.HIP_BUILDS for r in row.releases]
    assert releases == sorted(releases, key=_v)
    assert len(releases) == len(set(releases))
    # hip_build() joins the rows of one build: the lookup gives back every release of it.
    for row in hb.HIP_BUILDS:
        found = hb.hip_build(row.hip + "-0123abcd")
        assert found is not None and set(row.releases) <= set(found.releases), row


# --- APU flags ------------------------------------------------------------------------------
# An integrated GPU is named by its APU, its Ryzen CPU, its device (Steam Deck) or an
# integrated Radeon number (680M, 780M, 8060S, 890M); a discrete one by its card line.
_INTEGRATED = re.compile(r"\bAPU|\bRyzen\b|Steam Deck|^Radeon \d{3,4}[MS]\b")
_DISCRETE = re.compile(r"\bInstinct\b|\bRadeon RX\b|\bRadeon (?:Pro|PRO)\b|\bPRO W\d|"
                       r"\bRadeon VII\b|\bV[56]20\b|^Vega \d+$")


@pytest.mark.parametrize("gfx", sorted(kb_gfx.GFX_TARGETS))
def test_gfx_apu_flag_agrees_with_its_products(gfx: str) -> None:
    target = kb_gfx.GFX_TARGETS[gfx]
    integrated = bool(_INTEGRATED.search(target.products))
    discrete = bool(_DISCRETE.search(target.products))
    assert integrated != discrete, (gfx, target.products)  # each row names one kind
    assert target.apu == integrated, (gfx, target.apu, target.products)


# --- every release named anywhere has its rows ---------------------------------------------
_FLOOR = min(rs.version_key(v) for r in rs.RELEASES for v in r.versions)[:2]


def _named_minors() -> set[tuple[int, int]]:
    """Every ROCm major.minor the driver, wheel and HIP tables name, from the first release
    the support matrix covers on."""
    named = [v for row in ds.KMD_SUPPORT for v in row.user_space]
    named += [rocm for rocm, _, _ in ds.BUNDLED_DRIVERS]
    named += [row.rocm for row in (*ds.PREVIEW_DRIVERS, *ds.RELEASE_NOTE_DRIVERS)]
    named += [rocm for row in tw.WHEELS for rocm in row.rocm]
    named += [rocm for row in (*tw.WHEEL_TARGETS, *tw.INDEX_TARGETS) for rocm in
              ((row.rocm,) if isinstance(row.rocm, str) else row.rocm)]
    named += [r for row in hb.HIP_BUILDS for r in row.releases]
    minors = {(v[0], v[1]) for v in map(_v, named) if len(v) >= 2}
    return {m for m in minors if m >= _FLOOR}


@pytest.mark.parametrize("minor", sorted(_named_minors()), ids=lambda t: f"{t[0]}.{t[1]}")
def test_every_named_minor_release_has_support_hip_and_gfx_rows(minor: tuple[int, int]) -> None:
    text = f"{minor[0]}.{minor[1]}"
    releases = [v for r in rs.RELEASES for v in r.versions if rs.version_key(v)[:2] == minor]
    assert releases, f"ROCm {text} has no row in rocm_support.RELEASES"
    for release in releases:
        match = rs.release_for(release)
        assert match is not None and match.exact, release
        assert kb_gfx.rocm_native_targets(rs.version_key(release)) is not None, release
        assert (any(release in row.releases for row in hb.HIP_BUILDS)
                or release in hb.HIP_UNKNOWN), release


def test_each_memory_row_is_the_one_its_own_card_name_finds() -> None:
    """A datasheet row's name is a device name its pattern recognises, and no row before it
    takes that card (an H100 pattern must not take the H100 NVL, nor MI250 the MI250X)."""
    from rocmdoctor.kb.deep_refs import MEMORY, memory_spec
    assert [(row.name, memory_spec(row.name)) for row in MEMORY] == [
        (row.name, row) for row in MEMORY]
