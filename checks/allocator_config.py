"""allocator-config: PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF / PYTORCH_HIP_ALLOC_CONF.

Judged as the installed torch would: which variable it reads, whether the value parses
(torch raises at the first GPU allocation otherwise), and which settings it ignores here.

By hand: `env | grep ALLOC_CONF`, then `python -c "import torch; torch.zeros(1,
device='cuda'); print(torch.cuda.memory._snapshot()['allocator_settings'])"` shows what torch
parsed (an invalid value raises there instead).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from rocmdoctor.facts.alloc_conf import AllocConf, parse_alloc_conf, repair
from rocmdoctor.facts.environment import environment
from rocmdoctor.facts.platform import platform_kind
from rocmdoctor.facts.torch import TorchInfo, torch_info
from rocmdoctor.host import Host
from rocmdoctor.kb import allocator as kb
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


@dataclass
class _Verdict:
    status: Status = Status.PASS
    summary: str = ""
    findings: list[Finding] = field(default_factory=list)
    source: Optional[str] = None
    drop: set[str] = field(default_factory=set)

    def warn(self, text: str, source: str, drop: tuple[str, ...] = ()) -> None:
        if self.status is Status.PASS:
            self.status, self.summary, self.source = Status.WARN, text.split(": ")[0], source
        self.findings.append(Finding.error(text))
        self.drop.update(drop)


class AllocatorConfig(Check):
    id = "allocator-config"
    uses_python = True
    title = "PyTorch allocator settings (PYTORCH_*_ALLOC_CONF)"
    source = kb.CUDA_NOTES

    def applies(self, host: Host) -> Optional[str]:
        if any(var in environment(host) for var in kb.ALL_VARIABLES):
            return None
        return "none of PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF, PYTORCH_HIP_ALLOC_CONF is set"

    def run(self, host: Host) -> CheckResult:
        facts = torch_info(host)
        device = facts.build if facts.build in ("rocm", "cuda") else (
            "rocm" if platform_kind(host) == "rocm" else "cuda")
        rule = kb.precedence_for(facts.release)
        order = rule.order if device == "rocm" else rule.order_cuda
        env = environment(host)
        set_vars = [v for v in kb.ALL_VARIABLES if v in env]
        read = [v for v in order if v in env]
        winner = read[0] if read else None
        known = kb.option_names(rule.dialect, facts.release)
        torch_name = f"torch {facts.public_version}" if facts.release else "torch"
        verdict = _Verdict()
        info: list[Finding] = []
        if facts.release is None:
            info.append(Finding.info("torch's version is unknown: judged by the rules of "
                                     "torch 2.10 and newer"))
        if facts.build == "cpu":
            info.append(Finding.info("torch is a CPU build: allocator settings only take "
                                     "effect with a ROCm or CUDA build"))
        for var in set_vars:
            if var not in order:
                verdict.warn(f"{var} is ignored: {torch_name} ({device} build) reads only "
                             f"{' and '.join(order)}", rule.source)
        # The value the user meant: the winner's, unless it is empty or nothing is read.
        meant = next((v for v in [*read, *set_vars] if env[v].strip()), winner or set_vars[0])
        conf = parse_alloc_conf(env[meant], rule.dialect, device, known)
        if conf.error is not None and meant != winner:
            verdict.warn(f"{meant} would be rejected too: {conf.error.quote()}", rule.source)
        # An invalid value is judged as corrected, so the fix never sets an ignored option.
        judged = conf if conf.ok else parse_alloc_conf(
            repair(conf.text, rule.dialect, device, known), rule.dialect, device, known)
        target = self._judge(verdict, info, facts, rule, read or [meant], env, judged, device)
        findings = [*verdict.findings, *info]
        fix = self._fix(judged.text, set_vars, target, rule.dialect, device, known, verdict.drop)
        if conf.error is not None and meant == winner:
            findings.insert(0, Finding.error(
                f"{winner}={env[winner]!r}: {torch_name} raises {conf.error.quote()} "
                f"at the first GPU allocation"))
            source = kb.LEGACY_CONFIG_CPP if rule.dialect == "legacy" else kb.ALLOC_CONFIG_CPP
            return self.result(Status.FAIL, f"{winner} is invalid: torch raises "
                                            f"{conf.error.quote()}", findings, fix, source)
        if verdict.status is Status.PASS and winner is not None:
            in_effect = f" ({torch_name})" if facts.release else ""
            summary = (f"{winner} is set but empty: torch uses its defaults"
                       if not env[winner].strip() else
                       f"{winner}={env[winner]!r} is valid and in effect{in_effect}")
            return self.passed(summary, findings)
        return self.result(verdict.status, verdict.summary, findings, fix, verdict.source)

    @staticmethod
    def _judge(verdict: _Verdict, info: list[Finding], facts: TorchInfo,
               rule: kb.Precedence, read: list[str], env: Mapping[str, str], conf: AllocConf,
               device: str) -> str:
        """Warnings about the value in effect; returns the variable the fix should set."""
        torch_name = f"torch {facts.public_version}" if facts.release else "torch"
        winner = read[0]
        order = rule.order if device == "rocm" else rule.order_cuda
        target = winner if winner in order else kb.CUDA_ALLOC_CONF
        for var in read[1:]:
            same = (" (to the same value)" if env[var] == env[winner] else
                    f" (an empty {winner} counts as set)" if not env[winner].strip() else "")
            verdict.warn(f"{var} is shadowed{same}: {torch_name} uses only the first variable "
                         f"set, in the order {', '.join(order)}; {winner} wins",
                         rule.source)
        lo, hi = kb.ALLOC_CONF_IGNORED_RANGE
        if winner == kb.ALLOC_CONF and facts.release and lo <= facts.release < hi:
            target = kb.CUDA_ALLOC_CONF
            verdict.warn(f"{winner} may be ignored: torch 2.9.1 silently ignored "
                         f"expandable_segments given in PYTORCH_ALLOC_CONF (pytorch issue "
                         f"183387); torch 2.8 and 2.9 honour {kb.CUDA_ALLOC_CONF}",
                         kb.ALLOC_CONF_IGNORED_ISSUE)
        elif winner in rule.deprecated:
            info.append(Finding.info(f"{torch_name} warns \"{winner} is deprecated, use "
                                     f"PYTORCH_ALLOC_CONF instead\"; it still works"))
        expandable = conf.value("expandable_segments") == "True"
        effective = device != "rocm" or (
            (facts.release is None or facts.release >= kb.ROCM_EXPANDABLE_TORCH)
            and (facts.rocm_release is None or facts.rocm_release >= kb.ROCM_EXPANDABLE_ROCM))
        if expandable and not effective:
            built = ".".join(map(str, facts.rocm_release[:2])) if facts.rocm_release else "?"
            verdict.warn(f"expandable_segments:True is ignored: {torch_name} built for ROCm "
                         f"{built} prints \"{kb.EXPANDABLE_UNSUPPORTED_WARNING}\"; ROCm "
                         f"support starts with torch 2.12 built for ROCm 7.0 or newer",
                         kb.ROCM_EXPANDABLE_PR, drop=("expandable_segments",))
        backend = conf.value("backend")
        if backend in kb.ASYNC_BACKENDS:
            ignored = [k for k, _ in conf.options if getattr(kb.option(k), "native_only", False)]
            if ignored:
                verdict.warn(f"{', '.join(ignored)} ignored with backend:{backend}: torch "
                             f"warns \"{kb.ASYNC_IGNORES_WARNING}\"", kb.CUDA_ALLOC_CONFIG_CPP,
                             drop=tuple(ignored))
        if expandable and effective and device == "rocm" and conf.value("max_split_size_mb"):
            verdict.warn("expandable_segments:True with max_split_size_mb risks data loss on "
                         "ROCm: with ROCm 7.14 on gfx1201/gfx1100 a live tensor read back as "
                         "zeros (ROCm issue 6603), and reserved memory grew until the GPU was "
                         "full (pytorch issue 123548); drop max_split_size_mb",
                         kb.ROCM_ZEROS_ISSUE, drop=("max_split_size_mb",))
        return target

    @staticmethod
    def _fix(value: str, set_vars: list[str], target: str, dialect: str, device: str,
             known: frozenset[str], drop: set[str]) -> Fix:
        fixed = repair(value, dialect, device, known, frozenset(drop))
        others = [v for v in set_vars if v != target or not fixed]
        commands = [f"export {target}={shlex.quote(fixed)}"] if fixed else []
        if others:
            commands.append(f"unset {' '.join(others)}")
        text = (f"Set only {target}, to a value torch accepts and uses; put it in the shell "
                "profile or job script that starts training." if fixed else
                "Nothing in the setting takes effect here; unset it.")
        return Fix(text, commands=tuple(commands))
