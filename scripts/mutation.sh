#!/usr/bin/env bash
# Mutation testing with cosmic-ray (pip install cosmic-ray): each module below is mutated one
# change at a time and only the tests that hold it run, so a run fits a small machine.
#
#   bash scripts/mutation.sh                 # every module in the table
#   bash scripts/mutation.sh confirm kfd     # the modules whose name contains a word given
#   MUTATION_SAMPLE=80 bash scripts/mutation.sh   # 80 mutants drawn at random (seed 0) a module
#
# cosmic-ray writes each mutant into the file it tests, so the run happens in a copy of the
# working tree ($MUTATION_DIR, default a new folder under /tmp), which `rocmdoctor` is imported
# from (PYTHONPATH); the checkout is never touched. The last lines print, per module, the
# mutants killed, survived and the score (killed / (killed + survived); a mutant whose tests
# time out counts as killed, one that cosmic-ray could not apply is left out).
# docs/testing.md ("Mutation testing") records the figures of a run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
BIN=$(dirname "$(command -v "$PY")")
WORK=${MUTATION_DIR:-$(mktemp -d /tmp/rocmdoctor-mutation.XXXXXX)}
TIMEOUT=${MUTATION_TIMEOUT:-120}
SAMPLE=${MUTATION_SAMPLE:-0}
PYTEST="$PY -m pytest -x -q -p no:cacheprovider -p no:randomly"

# module | line ranges ("" = all) | tests that hold it (fast ones: a mutant runs them all)
REG=tests/test_regressions.py
MODULES=(
  "tuners/confirm.py||tests/test_tune_confirm.py $REG::test_confirmation_goes_on_while_one_of_several_candidates_is_undecided"
  "tuners/tune.py|295-361|tests/test_tune_budget.py"
  "doctor/redact.py||tests/test_redact.py"
  # checks, first half
  "checks/allocator_config.py||tests/test_allocator_config.py"
  "checks/amdgpu_driver.py||tests/test_amdgpu_driver.py tests/test_amdgpu_driver_refused.py"
  "checks/amdgpu_firmware.py||tests/test_amdgpu_firmware.py"
  # the e2e tests start real ranks (20 s each, and a loaded machine misses their deadlines)
  "checks/collectives.py||-m 'not e2e' tests/test_collectives.py"
  "checks/container.py||tests/test_container.py"
  "checks/debug_env.py||tests/test_debug_env.py"
  "checks/gfx_override.py||tests/test_gfx_override.py"
  "checks/gpu_agents.py||tests/test_gpu_agents.py"
  "checks/gpu_health.py||tests/test_gpu_health.py"
  "checks/kernel_log.py||tests/test_kernel_log.py"
  "checks/kernel_version.py||tests/test_kernel_version.py"
  "checks/pcie_atomics.py||tests/test_pcie.py"
  "checks/pcie_link.py||tests/test_pcie.py"
  # checks, second half
  "checks/kfd_access.py||tests/test_kfd_access.py $REG::test_kfd_readable_but_not_writable_fails $REG::test_group_membership_by_numeric_gid_counts"
  "checks/miopen_db.py||tests/test_miopen_db.py tests/test_runner.py::test_every_check_that_reads_the_probe_says_so"
  "checks/nvidia_driver.py||tests/test_nvidia_driver.py tests/test_runner.py::test_every_check_that_reads_the_probe_says_so"
  "checks/os_release.py||tests/test_os_release.py"
  "checks/perf_level.py||tests/test_perf_level.py"
  "checks/ppfeaturemask.py||tests/test_ppfeaturemask.py"
  "checks/registry.py||tests/test_runner.py tests/test_collectives.py::test_collectives_is_opt_in"
  "checks/rocm_install.py||tests/test_rocm_install.py"
  "checks/rocm_libraries.py||tests/test_rocm_libraries.py"
  "checks/rocm_permissions.py||tests/test_rocm_permissions.py"
  "checks/torch_arch_support.py||tests/test_torch_checks.py tests/test_nvidia_driver.py tests/test_kb_verdicts.py"
  "checks/torch_device.py||tests/test_torch_checks.py tests/test_loaded_rocm.py"
  "checks/torch_install.py||tests/test_torch_checks.py tests/test_kb_verdicts.py"
  "checks/torch_rocm_match.py||tests/test_torch_checks.py tests/test_torch_driver.py tests/test_loaded_rocm.py"
  "checks/torchvision_match.py||tests/test_torch_checks.py"
  "checks/visible_devices.py||tests/test_visible_devices.py"
)

mkdir -p "$WORK"
cd "$ROOT"
git ls-files -co --exclude-standard | while IFS= read -r f; do
  [ -f "$f" ] && mkdir -p "$WORK/$(dirname "$f")" && cp -p "$f" "$WORK/$f"
done
# `rocmdoctor` as setuptools maps it (doctor/ and, inside it, checks/ and tuners/), from the copy.
SITE="$WORK/.site/rocmdoctor"
mkdir -p "$SITE"
for entry in "$WORK"/doctor/*; do ln -sfn "$entry" "$SITE/"; done
ln -sfn "$WORK/checks" "$SITE/checks"
ln -sfn "$WORK/tuners" "$SITE/tuners"
export PYTHONPATH="$WORK/.site" PATH="$BIN:$PATH"
cd "$WORK"
"$PY" -c "import rocmdoctor.checks, sys; p = rocmdoctor.checks.__file__; \
sys.exit(0 if p.startswith('$WORK') else 'rocmdoctor is not imported from the copy: ' + p)"

summary=()
for row in "${MODULES[@]}"; do
  IFS='|' read -r module lines tests <<<"$row"
  if [ $# -gt 0 ]; then
    wanted=0
    for word in "$@"; do [[ "$module" == *"$word"* ]] && wanted=1; done
    [ "$wanted" = 1 ] || continue
  fi
  name=$(basename "$module" .py)
  config="$WORK/cr-$name.toml"
  session="$WORK/cr-$name.sqlite"
  {
    echo "[cosmic-ray]"
    echo "module-path = \"$module\""
    echo "timeout = $TIMEOUT.0"
    echo "excluded-modules = []"
    echo "test-command = \"$PYTEST $tests\""
    echo "[cosmic-ray.distributor]"
    echo "name = \"local\""
    if [ -n "$lines" ]; then
      echo "[cosmic-ray.filters.line-filter.lines]"
      echo "\"$module\" = [\"$lines\"]"
    fi
  } >"$config"
  echo "== $module ($tests) $(date -u +%FT%TZ)"
  rm -f "$session"
  "$BIN/cosmic-ray" init "$config" "$session"
  [ -n "$lines" ] && "$BIN/cr-filter-lines" --config "$config" "$session"
  if [ "$SAMPLE" -gt 0 ]; then  # keep SAMPLE of the pending mutants, skip the rest
    "$PY" - "$session" "$SAMPLE" <<'EOF'
import random, sys
from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import WorkerOutcome, WorkResult
with use_db(sys.argv[1], WorkDB.Mode.open) as db:
    def where(item):  # the same mutants for the same code, whatever the job ids
        m = item.mutations[0]
        return (str(m.module_path), m.start_pos, m.operator_name, m.occurrence)
    pending = [item.job_id for item in sorted(db.pending_work_items, key=where)]
    keep = set(random.Random(0).sample(pending, min(int(sys.argv[2]), len(pending))))
    for job in pending:
        if job not in keep:
            db.set_result(job, WorkResult(worker_outcome=WorkerOutcome.SKIPPED,
                                          output="not in the sample"))
EOF
  fi
  "$BIN/cosmic-ray" baseline "$config" >/dev/null || { echo "the tests fail unmutated"; exit 1; }
  "$BIN/cosmic-ray" exec "$config" "$session"
  line=$("$PY" - "$session" "$module" <<'EOF'
import json, subprocess, sys, os
session, module = sys.argv[1], sys.argv[2]
dump = subprocess.run([os.path.join(os.path.dirname(sys.executable), "cosmic-ray"), "dump",
                       session], capture_output=True, text=True, check=True).stdout
killed = survived = skipped = other = 0
alive = []
for line in dump.splitlines():
    item, result = json.loads(line)
    if result is None:
        other += 1
        continue
    worker, test = result.get("worker_outcome"), result.get("test_outcome")
    if worker == "skipped":
        skipped += 1
    elif worker != "normal":
        other += 1  # cosmic-ray could not apply it
    elif test == "survived":
        survived += 1
        m = item["mutations"][0]
        alive.append(f"{m['module_path']}:{m['start_pos'][0]} {m['operator_name']}"
                     f"#{m['occurrence']}")
    else:  # killed, or the tests timed out
        killed += 1
total = killed + survived
score = f"{100 * killed / total:.1f} %" if total else "n/a"
for a in alive:
    print(f"  survived: {a}", file=sys.stderr)
print(f"{module}: {killed} killed, {survived} survived, score {score} "
      f"({skipped} not run: outside the lines or the sample; {other} not applied)")
EOF
)
  echo "$line"
  summary+=("$line")
done
echo "== $(date -u +%FT%TZ) in $WORK"
printf '%s\n' "${summary[@]}"
