"""debug-env: debugging variables that serialize or slow the GPU.

By hand: `env | grep -E 'LAUNCH_BLOCKING|SERIALIZE|LOG_LEVEL|CHECK_NUMERICS|MEMORY_CACHING'`.
"""

from __future__ import annotations

from rocmdoctor.facts.environment import environment
from rocmdoctor.host import Host
from rocmdoctor.kb.debug_vars import DEBUG_VARS, level
from rocmdoctor.model import Check, CheckResult, Finding, Fix, Status


class DebugEnv(Check):
    id = "debug-env"
    title = "Debugging variables that slow the GPU"

    def run(self, host: Host) -> CheckResult:
        found = []
        env = environment(host)
        for var in DEBUG_VARS:
            value = env.get(var.name)
            if value is not None and level(value) >= var.min_level:
                found.append((var, value))
        if not found:
            return self.passed("no debugging variables that slow the GPU are set")
        findings = [
            Finding.error(f"{var.name}={value}: {var.cost}; for debugging only") for var, value
            in found
        ]
        names = [var.name for var, _ in found]
        fix = Fix(
            text="Unset these for training and benchmarks; set them only while debugging.",
            commands=(f"unset {' '.join(names)}",),
        )
        return self.result(
            Status.WARN,
            f"{', '.join(names)} set: GPU work runs slower",
            findings,
            fix,
            source=found[0][0].source,
        )
