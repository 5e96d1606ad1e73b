"""ppfeaturemask through a strict SnapshotHost, in the kernel's formats (hexint and uint)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from hypothesis import given
from hypothesis import strategies as st

from rocmdoctor.checks.ppfeaturemask import PARAM_FILE, PPFeatureMask
from rocmdoctor.host.snapshot import SnapshotHost
from rocmdoctor.kb.boot import GRUB_COMMANDS
from rocmdoctor.kb.ppfeatures import (
    AMD_SHARED_H,
    AMDGPU_DRV_C,
    DEFAULT_MASK,
    FEATURES_BY_BIT,
    PP_FEATURES,
    MaskDiff,
    diff_from_default,
    parse_mask,
)
from rocmdoctor.model import CheckResult, Finding, Fix, Status
from rocmdoctor.runner import run_one
from tests.helpers import make_snapshot

CHECK = PPFeatureMask()
ABSENT = ("/proc/cmdline", "/dev/kfd", "/sys/module/amdgpu", PARAM_FILE,
          "/proc/driver/nvidia/version", "/dev/nvidiactl")
ROCM = {"/opt/rocm/.info/version": "6.2.1\n", "/sys/module/amdgpu/initstate": "live\n"}
OVERDRIVE = ("bit 14 (PP_OVERDRIVE_MASK, OverDrive (over- and under-clocking)) on: "
             "pp_od_clk_voltage lets root change clocks and voltages out of spec; the kernel "
             "taints itself (TAINT_CPU_OUT_OF_SPEC) and logs 'Overdrive is enabled, please "
             "disable it before reporting any bugs'")
GFX_DCS = ("bit 19 (PP_GFX_DCS_MASK, GFX asynchronous DCS) on: a power feature that is off by "
           "default is on")
GFXOFF = ("bit 15 (PP_GFXOFF_MASK, GFXOFF (graphics engine powered off when idle)) off: the "
          "graphics engine stays powered when idle: more idle power, no loss of speed")
STUTTER = ("bit 17 (PP_STUTTER_MODE, stutter mode) off: a power-saving feature is off: more "
           "power and heat, speed mostly unchanged")


def host(files: dict[str, str], kernel: str = "6.8.0-45-generic") -> SnapshotHost:
    return SnapshotHost(make_snapshot(files={**ROCM, **files}, kernel=kernel), strict=True,
                        absent=ABSENT)


def run(h: SnapshotHost) -> CheckResult:
    return replace(run_one(CHECK, h), duration_ms=0)


def expect(status: Status, summary: str, findings: tuple[Finding, ...] = (),
           fix: Optional[Fix] = None, source: Optional[str] = None) -> CheckResult:
    return CHECK.result(status, summary, findings, fix, source)


def test_current_default_in_hexint_format_passes() -> None:
    h = host({PARAM_FILE: "0xfff7bfff\n"})
    assert run(h) == expect(Status.PASS, "ppfeaturemask 0xfff7bfff is the kernel default", (
        Finding.info("0xfff7bfff is the default since 2021 (OverDrive and GFX DCS off)"),))


def test_old_default_in_decimal_uint_format_passes() -> None:
    h = host({PARAM_FILE: "4294950911\n", "/proc/cmdline": "ro quiet\n"}, kernel="5.4.0-40-generic")
    assert run(h) == expect(Status.PASS, "ppfeaturemask 0xffffbfff is the kernel default", (
        Finding.info("0xffffbfff is the default of kernels before 2021 (OverDrive off)"),))


def test_the_default_set_by_hand_names_each_place_and_no_other_option() -> None:
    # The default written out on the command line and in modprobe.d, beside another amdgpu
    # option (runpm=0) that is no business of this check.
    conf = "options amdgpu runpm=0\noptions amdgpu ppfeaturemask=0xfff7bfff\n"
    h = host({PARAM_FILE: "0xfff7bfff\n", "/etc/modprobe.d/amdgpu.conf": conf,
              "/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro amdgpu.ppfeaturemask=0xfff7bfff\n"})
    assert run(h) == expect(Status.PASS, "ppfeaturemask 0xfff7bfff is the kernel default", (
        Finding.info("0xfff7bfff is the default since 2021 (OverDrive and GFX DCS off)"),
        Finding.info("set on the kernel command line: amdgpu.ppfeaturemask=0xfff7bfff"),
        Finding.info("set in /etc/modprobe.d/amdgpu.conf:2: options amdgpu "
                     "ppfeaturemask=0xfff7bfff")))


def test_all_bits_on_the_command_line_enables_overdrive() -> None:
    h = host({PARAM_FILE: "0xffffffff\n",
              "/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro amdgpu.ppfeaturemask=0xffffffff\n"})
    assert run(h) == expect(
        Status.WARN,
        "ppfeaturemask 0xffffffff differs from the default 0xfff7bfff: OVERDRIVE, GFX_DCS on", (
            Finding.info("set on the kernel command line: amdgpu.ppfeaturemask=0xffffffff"),
            Finding.error(OVERDRIVE), Finding.error(GFX_DCS),
        ), Fix("Remove amdgpu.ppfeaturemask=0xffffffff from GRUB_CMDLINE_LINUX_DEFAULT and "
               "GRUB_CMDLINE_LINUX in /etc/default/grub, regenerate the GRUB configuration "
               "(update-grub on Debian/Ubuntu) and reboot; the driver then uses its default mask.",
               GRUB_COMMANDS, needs_root=True), AMDGPU_DRV_C)


def test_modprobe_options_that_trade_gfxoff_for_overdrive() -> None:
    conf = "# overclocking\noptions amdgpu ppfeaturemask=0xfffd7fff\n"
    h = host({PARAM_FILE: "0xfffd7fff\n", "/etc/modprobe.d/amdgpu.conf": conf})
    assert run(h) == expect(
        Status.WARN, "ppfeaturemask 0xfffd7fff differs from the default 0xfff7bfff: "
        "OVERDRIVE, GFX_DCS on; GFXOFF, STUTTER_MODE off", (
            Finding.info("set in /etc/modprobe.d/amdgpu.conf:2: options amdgpu ppfeaturemask=0xfffd7fff"),
            Finding.error(OVERDRIVE), Finding.error(GFX_DCS),
            Finding.error(GFXOFF), Finding.error(STUTTER),
        ), Fix("Comment out the options line, rebuild the initramfs (update-initramfs -u on "
               "Debian/Ubuntu, dracut -f on Fedora/RHEL) and reboot; the driver then uses its "
               "default mask.", ("sudo sed -i '2s/^/# /' /etc/modprobe.d/amdgpu.conf",),
               needs_root=True), AMDGPU_DRV_C)


def test_gfxoff_off_on_the_old_default_is_sourced_to_the_bit_table() -> None:
    # 0xffff3fff: the pre-2021 default (0xffffbfff) with GFXOFF cleared; on a current kernel it
    # also turns GFX DCS on. No OverDrive: the source is the bit table (amd_shared.h), not the
    # driver's OverDrive taint (amdgpu_drv.c).
    conf = "options amdgpu ppfeaturemask=0xffff3fff\n"
    h = host({PARAM_FILE: "0xffff3fff\n", "/etc/modprobe.d/amdgpu.conf": conf})
    assert run(h) == expect(
        Status.WARN, "ppfeaturemask 0xffff3fff differs from the default 0xfff7bfff: GFX_DCS on; "
        "GFXOFF off", (
            Finding.info("set in /etc/modprobe.d/amdgpu.conf:1: options amdgpu "
                         "ppfeaturemask=0xffff3fff"),
            Finding.error(GFX_DCS), Finding.error(GFXOFF),
        ), Fix("Comment out the options line, rebuild the initramfs (update-initramfs -u on "
               "Debian/Ubuntu, dracut -f on Fedora/RHEL) and reboot; the driver then uses its "
               "default mask.", ("sudo sed -i '1s/^/# /' /etc/modprobe.d/amdgpu.conf",),
               needs_root=True), AMD_SHARED_H)


def test_dpm_off_from_an_unknown_place() -> None:
    h = host({PARAM_FILE: f"{DEFAULT_MASK & ~0x1:#010x}\n"})
    assert run(h) == expect(
        Status.WARN, "ppfeaturemask 0xfff7bffe differs from the default 0xfff7bfff: SCLK_DPM off",
        (Finding.error("bit 0 (PP_SCLK_DPM_MASK, graphics clock (SCLK) DPM) off: that clock "
                       "stops following the load and stays at one level, usually slower"),),
        Fix("The mask is set somewhere other than the kernel command line and /etc/modprobe.d "
            "(another modprobe.d folder or the initramfs); find it, remove it and reboot.",
            ("grep -rs ppfeaturemask /etc /usr/lib/modprobe.d /lib/modprobe.d",)))


def test_cleared_unused_bits_change_nothing() -> None:
    h = host({PARAM_FILE: "0x0007bfff\n"})
    bits = ", ".join(str(b) for b in range(20, 32))
    assert run(h) == expect(Status.PASS, "ppfeaturemask 0x0007bfff: every feature as by default", (
        Finding.info(f"bits {bits} are cleared; no feature uses them"),))


def test_unparseable_value_warns() -> None:
    assert run(host({PARAM_FILE: "0xfff7bfffff\n"})) == expect(
        Status.WARN, "ppfeaturemask reads '0xfff7bfffff', which is not a 32-bit number")


def test_skips_when_it_cannot_apply() -> None:
    unloaded = SnapshotHost(make_snapshot(files={"/opt/rocm/.info/version": "6.2.1\n"}),
                            strict=True, absent=ABSENT)
    assert run(unloaded) == expect(
        Status.SKIP, "amdgpu is not loaded (the amdgpu-driver check says why)")
    wsl = host({}, kernel="5.15.153.1-microsoft-standard-WSL2")
    assert run(wsl) == expect(Status.SKIP, "WSL2 has no amdgpu module")
    assert run(host({})) == expect(Status.SKIP, f"{PARAM_FILE} cannot be read")


def test_parse_mask_reads_like_kstrtouint() -> None:
    assert parse_mask("0xfff7bfff\n") == 0xFFF7BFFF
    assert parse_mask("4294950911") == 0xFFFFBFFF
    assert parse_mask("00000000") == 0  # "%#08x" of zero
    assert parse_mask("017") == 15
    for bad in ("", "0x", "089", "-1", "0x100000000", "1_000", "\u0661\u0662", "auto"):
        assert parse_mask(bad) is None


def test_the_bit_table_matches_amd_shared_h() -> None:
    assert [f.bit for f in PP_FEATURES] == list(range(20))
    assert FEATURES_BY_BIT[14].mask == 0x4000 and FEATURES_BY_BIT[15].mask == 0x8000
    assert FEATURES_BY_BIT[19].mask == 0x80000
    assert diff_from_default(DEFAULT_MASK) == MaskDiff((), (), ())


@given(st.text())
def test_parse_mask_never_raises(text: str) -> None:
    value = parse_mask(text)
    assert value is None or 0 <= value <= 0xFFFFFFFF


@given(st.integers(min_value=0, max_value=0xFFFFFFFF))
def test_diff_accounts_for_every_changed_bit(mask: int) -> None:
    diff = diff_from_default(mask)
    changed = {f.bit for f in diff.turned_on + diff.turned_off} | set(diff.undefined_cleared)
    assert changed == {b for b in range(32) if (mask ^ DEFAULT_MASK) >> b & 1}
