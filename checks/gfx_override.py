"""gfx-override: HSA_OVERRIDE_GFX_VERSION (and per-node HSA_OVERRIDE_GFX_VERSION_<node>) is
needed, unneeded, or wrong for the GPUs present.

The override makes the runtime load code built for another target. It helps only when the
real target lacks code (not in PyTorch's arch list) and the chosen target belongs to the same
instruction-set family. With it set, rocminfo reports the overridden target, so the real one
is read from the KFD topology. By hand: `env | grep HSA_OVERRIDE`, then
`grep -H gfx_target_version /sys/class/kfd/kfd/topology/nodes/*/properties` (110000 = gfx1100)
and `python -c 'import torch; print(torch.cuda.get_arch_list())'`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rocmdoctor.facts.amd_gpus import GpuAgent, amd_gpus, describe, override_for_node, override_vars
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.libload import libload_known, rocm_libraries
from rocmdoctor.facts.platform import not_rocm_reason
from rocmdoctor.facts.rocm_root import installed_rocm
from rocmdoctor.facts.rocm_version import release_of_package
from rocmdoctor.facts.torch import torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import KB_DATE
from rocmdoctor.kb import gfx as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status

_RANK = {Status.PASS: 0, Status.WARN: 1, Status.FAIL: 2}


def _newer() -> str:
    return f"newer than what this rocmdoctor knows, tables dated {KB_DATE}"
TORCH_ARCH = "https://docs.pytorch.org/docs/stable/generated/torch.cuda.get_arch_list.html"


@dataclass(frozen=True)
class Verdict:
    status: Status
    text: str
    commands: tuple[str, ...] = ()
    source: str = kb.HSAKMT_TOPOLOGY
    needed: bool = False  # a PASS because the GPU needs the override


def torch_arch_list(host: Host) -> Optional[frozenset[str]]:
    arch = torch_info(host).arch_list
    return frozenset(kb.base_target(a) for a in arch) if arch else None


class GfxOverride(Check):
    id = "gfx-override"
    uses_python = True
    title = "HSA_OVERRIDE_GFX_VERSION"
    source = kb.HSAKMT_TOPOLOGY

    def applies(self, host: Host) -> Optional[str]:
        return not_rocm_reason(host)

    def run(self, host: Host) -> CheckResult:
        overrides = override_vars(environment(host))
        if not overrides:
            return self.passed("HSA_OVERRIDE_GFX_VERSION is not set")
        bad = [(k, v) for k, v in sorted(overrides.items()) if kb.parse_override(v) is None]
        if bad:
            var, value = bad[0]
            return self.result(
                Status.FAIL, f"{var}={value!r} is not a version X.Y.Z: the ROCm runtime "
                "rejects it and finds no GPU",
                [Finding.error(f"{k}={v!r}: libhsakmt accepts only major.minor.stepping "
                               "(major <= 63, minor and stepping <= 255), nothing around it")
                 for k, v in bad],
                Fix("Unset it, or set it to the X.Y.Z value your GPU needs (see gfx-override "
                    "after fixing).", commands=tuple(f"unset {k}" for k, _ in bad)))
        inv = amd_gpus(host)
        setting = ", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))
        if not inv.gpus:
            return self.result(Status.WARN, f"{setting} is set, but no GPU was found to compare "
                               "it with (see gpu-agents)")
        arch = torch_arch_list(host)
        install = installed_rocm(host) if arch is None else None
        version = install.key if install else None
        release = kb.rocm_native_targets(version) if version else None
        affected = [g for g in inv.gpus if override_for_node(environment(host), g.node)]
        verdicts = [(g, self._judge(host, g, arch, release, version, len(affected) > 1))
                    for g in affected]
        findings = [self._finding(g, v) for g, v in verdicts]
        findings += [Finding.info(f"GPU {g.index} ({describe(g)}) is not affected")
                     for g in inv.gpus if g not in affected]
        if not verdicts:
            return self.passed(f"{setting} applies to no GPU present", findings)
        worst = max((v for _, v in verdicts), key=lambda v: (_RANK[v.status], v.needed))
        if worst.status is Status.PASS and not worst.needed:
            return self.result(Status.WARN, f"{setting} changes nothing: every GPU it reaches "
                               "already has that target", findings,
                               Fix("Unset the override.",
                                   commands=tuple(f"unset {k}" for k in sorted(overrides))))
        if worst.status is Status.PASS:
            return self.passed(f"{setting} is needed: {worst.text}", findings, worst.source)
        fix = Fix("Unset the override." if worst.commands[-1].startswith("unset")
                  else "Set the override to the value that works for this GPU.",
                  commands=worst.commands)
        return self.result(worst.status, f"{setting}: {worst.text}", findings, fix, worst.source)

    @staticmethod
    def _finding(g: GpuAgent, v: Verdict) -> Finding:
        text = f"GPU {g.index} ({describe(g)}): {v.text}"
        if v.status is Status.FAIL:
            return Finding.error(text)
        return Finding.hint(text) if v.status is Status.WARN else Finding.info(text)

    def _judge(self, host: Host, g: GpuAgent, arch: Optional[frozenset[str]],
               release: Optional[kb.RocmRelease], version: Optional[tuple[int, int, int]],
               several: bool) -> Verdict:
        var, value = override_for_node(environment(host), g.node) or ("", "")
        target = kb.override_value_target(value) or ""
        unset: tuple[str, ...] = (f"unset {var}",)
        if not g.gfx_known:
            return Verdict(Status.WARN, f"its real target is unknown: rocminfo reports the "
                           f"overridden {g.gfx} and the KFD topology is not readable", unset)
        real = g.gfx
        if target == real:
            if several:
                return Verdict(Status.PASS, f"{value} is its own target ({real}): no effect")
            return Verdict(Status.WARN, f"{value} is {real}, the GPU's own target: the override "
                           "changes nothing; unset it", unset)
        if kb.family_of(real) is None:
            return Verdict(Status.WARN, f"{real} is {_newer()}: whether {target} code runs on "
                           "it is not known", unset, kb.LLVM_GENERIC)
        if kb.family_of(target) is None:
            return Verdict(Status.WARN, f"{value} selects {target}, a target this rocmdoctor "
                           f"does not know (tables dated {KB_DATE})", unset, kb.LLVM_GENERIC)
        native, basis = self._native(real, arch, release, version)
        rule = kb.override_for(real)
        fix: tuple[str, ...] = unset if rule is None else self._set(var, g, rule.value, several)
        # Another family's code objects are the wrong instruction set, whether or not the GPU
        # has code of its own: this comes before the "unneeded" test.
        real_group, target_group = kb.isa_group(real), kb.isa_group(target)
        if real_group and target_group and real_group != target_group:
            fam_r, fam_t = kb.family_of(real) or real, kb.family_of(target) or target
            return Verdict(Status.FAIL, f"wrong family: {value} selects {target} ({fam_t}) code "
                           f"for a {fam_r} GPU ({real}); code for another family does not run "
                           "on it", unset if native else fix, kb.LLVM_GENERIC)
        if native:
            per_node = (" (set HSA_OVERRIDE_GFX_VERSION_<node> only for the GPUs that need it)"
                        if several and var == "HSA_OVERRIDE_GFX_VERSION" else "")
            return Verdict(Status.WARN, f"unneeded: {real} is in {basis}, and the override makes "
                           f"it run {target} code instead{per_node}", unset,
                           kb.ROCM_MATRIX if arch is None else TORCH_ARCH)
        if arch is not None and target not in arch:
            return Verdict(Status.FAIL, f"{target} is not in PyTorch's arch list either, so "
                           f"the override cannot help {real}", fix)
        # As libhsakmt reads the value (11.0.00 is 11.0.0), not as it is spelled.
        reports = [r for r in kb.override_reports(real)
                   if kb.parse_override(r.value) == kb.parse_override(value)]
        if reports and not reports[0].works:
            return Verdict(Status.WARN, f"{value} on {real}: {reports[0].note}", unset,
                           reports[0].source)
        why = self._why_no_code(real, native, basis, version)
        hang = self._hang(host, reports[0]) if reports else None
        if hang is not None:
            return Verdict(Status.WARN, f"{value} is reported to work on {real}, but {hang.note}",
                           unset, hang.source)
        if reports:
            return Verdict(Status.PASS, f"{why}; {value} {reports[0].note}", (),
                           reports[0].source, needed=True)
        if rule is not None:
            return Verdict(Status.WARN, f"{value} is not the value reported to work for {real}; "
                           f"that is {rule.value} ({rule.note})", fix, rule.source)
        return Verdict(Status.WARN, f"{why}; {value} ({target}) is in the same family, but "
                       f"no report says it works on {real}", unset, kb.LLVM_GENERIC)

    @staticmethod
    def _hang(host: Host, rule: kb.OverrideRule) -> Optional[kb.HangReport]:
        """A report of this value hanging with the ROCm SDK or package family installed here
        (the pip packages as the probe, or the library-load child when it ran, lists them)."""
        packages = dict(torch_info(host).packages)
        if libload_known(host):
            packages.update(rocm_libraries(host).packages)
        names = {k.lower().replace("_", "-") for k in packages}
        sdk = release_of_package(packages.get("rocm-sdk-core") or "")
        families = {n for n in names if n.startswith("rocm-sdk-libraries-")}
        for hang in rule.hangs:
            if families:  # the per-family packages are known: the report's family decides
                if any(f"rocm-sdk-libraries-{f}" in families for f in hang.families):
                    return hang
            elif sdk is not None and tuple(int(p) for p in sdk.split(".")[:2]) >= hang.sdk_from:
                return hang
        return None

    @staticmethod
    def _native(real: str, arch: Optional[frozenset[str]], release: Optional[kb.RocmRelease],
                version: Optional[tuple[int, int, int]]) -> tuple[Optional[bool], str]:
        """Whether the GPU has code of its own, and what says so."""
        if arch is not None:
            return real in arch, "PyTorch's compiled arch list"
        if release is not None and version is not None:
            return real in release.targets, "the ROCm {}.{} support list".format(*version)
        return None, ""

    @staticmethod
    def _why_no_code(real: str, native: Optional[bool], basis: str,
                     version: Optional[tuple[int, int, int]]) -> str:
        if native is False:
            first = kb.first_release_with(real)
            later = (f" (AMD lists it from ROCm {kb.release_name(first)} on)"
                     if first is not None and version is not None and first.first > version
                     and basis.startswith("the ROCm") else "")
            return f"{real} is not in {basis}{later}"
        if version is not None and kb.rocm_newer_than_known(version):
            return (f"could not tell whether {real} has native code (no PyTorch arch list; "
                    "ROCm {}.{}.{} is ".format(*version) + f"{_newer()})")
        return (f"could not tell whether {real} has native code (no PyTorch arch list, ROCm "
                "release not known)")

    @staticmethod
    def _set(var: str, g: GpuAgent, value: str, several: bool) -> tuple[str, ...]:
        """A per-node override when the global one also reaches other GPUs."""
        if several and var == "HSA_OVERRIDE_GFX_VERSION" and g.node is not None:
            return (f"unset {var}", f"export HSA_OVERRIDE_GFX_VERSION_{g.node}={value}")
        return (f"export {var}={value}",)
