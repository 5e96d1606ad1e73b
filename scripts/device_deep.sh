#!/usr/bin/env bash
# `rocmdoctor check --deep` on a GPU machine (an NVIDIA H200 for docs/benchmarks.md): three
# runs in fresh processes (figures and their run-to-run spread), then the degraded runs the
# measured checks must catch (CUDA_LAUNCH_BLOCKING=1; NVIDIA_TF32_OVERRIDE=0, which forces the
# tf32 GEMM to fp32 strict; a throttled card simulated through the telemetry reader, a switch
# honoured only with ROCMDOCTOR_TESTING=1), a snapshot of one run (a recorded GPU run for the
# tests), and a table of the figures last. Nothing here changes a GPU setting.
#   bash scripts/device_deep.sh            results (JSON, text, snapshot) under $OUT
#   SMOKE=1 bash scripts/device_deep.sh    the same plumbing on CPU test devices, anywhere
# Budget: under 4 minutes on an H200 (about 25 s a run).
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:-$PWD/deep-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
START=$SECONDS
if [ -n "${SMOKE:-}" ]; then
  export ROCMDOCTOR_TESTING=1 ROCMDOCTOR_DEEP_CPU=1
else
  bash scripts/device_install.sh || exit 1
  nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit,clocks.max.sm \
    --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
fi
"$PY" -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda or torch.version.hip)"

run() {  # run NAME [VAR=VALUE ...]: one `check --deep --json` in a fresh process
  local name="$1"; shift
  local s=$SECONDS
  env "$@" timeout 120 "$PY" -m rocmdoctor check --deep --json -o "$OUT/$name.json" \
    2>"$OUT/$name.err"
  echo "--- $name: exit $? after $((SECONDS - s)) s"
}

for i in 1 2 3; do run "deep-$i"; done
run launch-blocking CUDA_LAUNCH_BLOCKING=1
run fp32-strict NVIDIA_TF32_OVERRIDE=0
run throttled ROCMDOCTOR_TESTING=1 ROCMDOCTOR_DEEP_TELEMETRY=throttled
if [ $((SECONDS - START)) -lt 170 ]; then
  timeout 90 "$PY" -m rocmdoctor snapshot --deep -o "$OUT/deep-snapshot.json.gz" \
    2>"$OUT/snapshot.err"
  echo "--- snapshot: exit $?"
fi

"$PY" - "$OUT" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]

def load(name):
    try:
        with open(os.path.join(out, name + ".json"), encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"{name}: no result ({exc})")
        return None

def figures(data):
    return {(c["id"], f["key"], f.get("gpu")): f for c in data["checks"]
            for f in c.get("figures", [])} if data else {}

runs = [figures(load(f"deep-{i}")) for i in (1, 2, 3)]
keys = sorted({k for r in runs for k in r}, key=lambda k: (k[2] or 0, k[0], k[1]))
print(f"\n{'GPU':<4}{'figure':<44}{'run 1':>11}{'run 2':>11}{'run 3':>11}{'unit':>9}"
      f"{'across':>8}{'within':>8}  verdict")
for key in keys:
    fs = [r.get(key) for r in runs]
    values = [f["value"] for f in fs if f and f.get("value")]
    if not values:
        continue
    across = (max(values) - min(values)) / statistics.mean(values) * 100
    within = max((f.get("spread_pct") or 0) for f in fs if f)
    unit = next(f["unit"] for f in fs if f)
    cells = "".join(f"{f['value']:>11,.1f}" if f and f.get("value") else f"{'-':>11}"
                    for f in fs)
    verdicts = "/".join(sorted({str(f.get("verdict")) for f in fs if f}))
    print(f"{key[2] if key[2] is not None else '':<4}{(key[0] + ' ' + fs[0]['name'] if fs[0] else key[1])[:43]:<44}"
          f"{cells}{unit:>9}{across:>7.2f}%{within:>7.2f}%  {verdicts}")
print("\nacross: (max - min) / mean of the three runs; within: the largest (max - min) / median "
      "of one run's timed repetitions")

expect = {"launch-blocking": ("kernel-launch", "warn"), "fp32-strict": ("gemm-rate", "warn"),
          "throttled": ("clocks-under-load", "fail")}
print()
for name, (cid, wanted) in expect.items():
    data = load(name)
    if not data:
        continue
    c = next((c for c in data["checks"] if c["id"] == cid), None)
    got = c["status"] if c else "missing"
    mark = "caught" if got == wanted else "NOT CAUGHT"
    print(f"{name:<16} {cid:<18} {got:<6} ({mark}): {c['summary'] if c else ''}")
if os.environ.get("SMOKE"):
    print("(SMOKE: CPU test devices give no launch or TF32 verdict: only the plumbing is shown)")
PY
echo "total $((SECONDS - START)) s; results in $OUT"
