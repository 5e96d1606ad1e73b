#!/usr/bin/env bash
# The runs on a lent GPU machine, as subcommands. Each runs from this checkout's root there;
# a run longer than one call starts in its own session (setsid) and later calls wait for it.
#
#   bash scripts/device.sh install               rocmdoctor and the wheels the image lacks
#                                                (.carry/wheels: optuna, the newest typer,
#                                                rich, psutil, packaging), editable
#   bash scripts/device.sh checks N              `rocmdoctor check` and a bare `import torch`,
#                                                alternated N times, each timed (check-vs-torch.txt)
#   bash scripts/device.sh checktime N           where check's time goes: check, import torch and
#                                                the probe child's stages, alternated N times
#   bash scripts/device.sh witness-start         a process that keeps this checkout's folder as
#                                                its working folder, to see whether the next call
#                                                replaces that folder
#   bash scripts/device.sh witness-check         whether it was replaced, and what `import torch`
#                                                does in the old folder and in the new one, with
#                                                a clean environment and with this one
#   bash scripts/device.sh start NAME ARGS...    `rocmdoctor tune ARGS --output/--export/--html`
#                                                in its own session, with a monitor beside it
#   bash scripts/device.sh wait NAME SECONDS     wait for it up to SECONDS; when it has ended,
#                                                pack what it wrote into $OUT/NAME.tar.gz
#   bash scripts/device.sh deep
#     `rocmdoctor check --deep` on a GPU machine (an NVIDIA H200 for docs/benchmarks.md): three
#     runs in fresh processes (figures and their run-to-run spread), then the degraded runs the
#     measured checks must catch (CUDA_LAUNCH_BLOCKING=1; NVIDIA_TF32_OVERRIDE=0, which forces the
#     tf32 GEMM to fp32 strict; a throttled card simulated through the telemetry reader, a switch
#     honoured only with ROCMDOCTOR_TESTING=1), a snapshot of one run (a recorded GPU run for the
#     tests), and a table of the figures last. Nothing here changes a GPU setting.
#       bash scripts/device.sh deep            results (JSON, text, snapshot) in $OUT/deep.tgz
#       SMOKE=1 bash scripts/device.sh deep    the same plumbing on CPU test devices, anywhere
#     Budget: under 4 minutes on an H200 (about 25 s a run).
#   bash scripts/device.sh data-follow NAME
#     After `start NAME ... --data ...`: the pick of that tune (its confirmed best, else its
#     fastest finished trial) measured by `rocmdoctor bench` on synthetic tensors with the same
#     model settings and no loader, to see how close the tuned input pipeline comes to it.
#     Results: $OUT/NAME-synthetic.json and .txt.
#
# Earlier runs (docs/benchmarks.md cites them by subcommand):
#   bash scripts/device.sh evidence
#     What the NVIDIA H200 evidence run does, in one call: install rocmdoctor (with carried
#     wheels), check / snapshot / report, the timing figures, the GPU-marked tests, the bench
#     runs (the bench subcommand); everything lands in one tarball under $OUT.
#   bash scripts/device.sh bench
#     One-shot GPU benchmark run, on a machine with a GPU, torch and torchvision.
#       pip install --no-deps -e . && bash scripts/device.sh bench  (results under $OUT)
#     Runs: ResNet-50 batch 128 in fp32 (strict), tf32+channels_last, bf16+channels_last,
#     bf16+channels_last+torch.compile; ViT-B/16 bf16; GPT-2-small bf16; then the
#     bf16+channels_last configuration 3 more times for the run-to-run spread. Each run is a fresh
#     process (rocmdoctor bench); each result JSON lands in $OUT; a table is printed at the end.
#     Budget: about 5 minutes on an H200 (torch.compile of ResNet-50 takes about a minute).
#     SMOKE=1 replaces every run by a tiny CPU run (later flags win), to check the plumbing.
#   bash scripts/device.sh grid
#     One part of the exhaustive grid over tune's default CUDA space for ResNet-50 (128
#     configurations, BruteForce sampler at --max-trials 128), to compare the tuner's pick with
#     the grid's best. The study database travels between sessions: name `.carry` in the call's
#     carry list; the updated database comes back as $OUT/grid.db; copy it to .carry/grid/grid.db.
#     On a machine still warm from the last part, the database in /tmp/grid-state (newer than the
#     carried one) and the compile cache are used instead. Each part runs until LIMIT seconds
#     (then Ctrl-C: the running trials are requeued) and the next part resumes where it stopped.
#     scripts/grid_report.py reads the database: what is measured, what is not, the comparison.
#     GPUS=0,1 measures two configurations at a time; every trial shares one TorchInductor cache
#     (--compile-cache), which shortens compiled trials but changes no steady-state figure.
#   bash scripts/device.sh multi
#     On a machine with two GPUs (nvidia-h200-x2): `rocmdoctor check --collectives` live, with
#     NCCL_P2P_DISABLE=1, and a snapshot that records the run (replayed by the tests); then the
#     bench-overhead run of device.sh overhead on GPU 0. Results: $OUT/multi.tgz.
#   bash scripts/device.sh overhead
#     Is `rocmdoctor bench` slower than a plain loop on a host-bound configuration (ResNet-50,
#     batch 128, bf16, channels_last, torch.compile on an H200)? Interleaved, in alternating
#     order: the plain loop (3 x 50 steps), the bench with its power sampler (now a separate
#     process), the bench with --set extras=false (no sampler, FLOP count or GEMM peak).
#   bash scripts/device.sh round2
#     Second call on nvidia-h200-x2: the collectives check again (peer copies now timed with
#     both devices synchronised), the tune on one GPU and on two, then the bench overhead pairs
#     with power sampled at 10 Hz. Results: $OUT/round2.tgz.
#   bash scripts/device.sh tune-evidence
#     The H200 tune evidence: rocmdoctor tune --model resnet50 --batch-sizes 128,256 on the default
#     space, its outputs (JSON, env file, HTML, the study database) in one tarball under $OUT.
#   bash scripts/device.sh tune-beside-grid
#     On nvidia-h200-x2: the collectives check (its peer copies in their own process), then the
#     seeded tune evidence (the tune-evidence subcommand) on GPU 0 while the exhaustive grid
#     (the grid subcommand) goes on on GPU 1, both stopped by LIMIT seconds. Results:
#     $OUT/collectives.tgz, $OUT/tune.tgz, $OUT/grid.db.
#   bash scripts/device.sh tune-gpus
#     On two GPUs (nvidia-h200-x2): the same tune on one GPU, then on both (--gpus 0,1); a small
#     eager space so both finish in one call. Results (JSON, logs) in $OUT/tune-gpus.tgz.
set -uo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

cmd_evidence() (
export PYTHONUNBUFFERED=1 TIMEFORMAT="%R"
W=/tmp/rocmdoctor-evidence; rm -rf "$W"; mkdir -p "$W"
PY=python3
$PY -m pip install -q --no-deps --no-index .carry/wheels/*.whl 2>&1 | tail -2
$PY -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
$PY -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"

echo "=== rocmdoctor check -v"
$PY -m rocmdoctor check -v | tee "$W/check.txt"; echo "exit ${PIPESTATUS[0]}"
$PY -m rocmdoctor check --json > "$W/check.json"; echo "json exit $?"
$PY -m rocmdoctor snapshot -o "$W/h200-snapshot.json.gz"
$PY -m rocmdoctor report -o "$W/report.md"; echo "report exit $?"

echo "=== timings (seconds, wall)"
{
  for i in 1 2 3; do echo "import-torch $( { time $PY -c 'import torch' ; } 2>&1 )"; done
  for i in 1 2 3; do echo "check $( { time $PY -m rocmdoctor check >/dev/null ; } 2>&1 )"; done
  for i in 1 2 3; do echo "help $( { time $PY -m rocmdoctor --help >/dev/null ; } 2>&1 )"; done
  echo "collect_env $( { time $PY -m torch.utils.collect_env >"$W/collect_env.txt" 2>&1 ; } 2>&1 )"
} | tee "$W/timings.txt"

echo "=== GPU-marked tests"
$PY -m pytest -q -m gpu -p no:cacheprovider tests 2>&1 | tail -n 15 | tee "$W/gpu-tests.txt"

if [ "${SKIP_BENCH:-}" != 1 ]; then
  echo "=== bench"
  OUT="$W/bench" "$SELF" bench 2>&1 | tee "$W/bench.txt" | tail -n 60
fi
tar czf "$OUT/evidence.tgz" -C "$W" .
ls -la "$OUT"
)

cmd_bench() (

OUT="${OUT:-$PWD/bench-out}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1

# `rocmdoctor bench` once rocmdoctor.cli.app registers it; the same commands directly otherwise.
APP="import typer; from rocmdoctor.cli.bench import bench_command, compare_command
app = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None)
app.command('bench')(bench_command); app.command('compare')(compare_command); app()"
rd() { "$PY" -c "$APP" "$@"; }

"$PY" - <<'PY'
import platform, torch
print(f"python {platform.python_version()}, torch {torch.__version__}, "
      f"cuda {torch.version.cuda}, hip {torch.version.hip}")
print("device:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
try:
    import torchvision; print("torchvision", torchvision.__version__)
except Exception as exc:
    print("torchvision unusable:", exc)
try:
    import pynvml; print("power: pynvml (NVML)")
except Exception:
    print("power: no pynvml; falling back to nvidia-smi -lms 100")
PY

failed=0
run() {  # run NAME TIMEOUT ARGS...
  local name="$1" timeout="$2"; shift 2
  echo "=== $name: rocmdoctor bench $*"
  local start=$SECONDS
  if [ -n "${SMOKE:-}" ]; then  # plumbing check on any machine: tiny CPU runs
    set -- "$@" --model tinycnn --device cpu --image-size 16 --batch-size 8 --warmup 1 --steps 5
  fi
  rd bench --device "${DEVICE:-cuda}" --timeout "$timeout" --json "$OUT/$name.json" "$@" \
    >"$OUT/$name.txt" 2>"$OUT/$name.err"
  local rc=$?
  if [ $rc -eq 0 ]; then
    cat "$OUT/$name.txt"
  else
    failed=$((failed + 1))
    echo "!!! $name failed (exit $rc):"; tail -n 20 "$OUT/$name.err"
  fi
  echo "--- $name took $((SECONDS - start)) s"
}

R50=(--model resnet50 --batch-size 128 --warmup 10 --steps 50)
run resnet50-fp32         240 "${R50[@]}" --precision fp32
run resnet50-tf32-cl      240 "${R50[@]}" --precision tf32 --channels-last
run resnet50-bf16-cl      240 "${R50[@]}" --precision bf16 --channels-last
run resnet50-bf16-cl-compile 420 "${R50[@]}" --precision bf16 --channels-last --compile
run vit_b_16-bf16         240 --model vit_b_16 --batch-size 128 --warmup 10 --steps 40 --precision bf16
run gpt2-bf16             240 --model gpt2 --batch-size 16 --seq-len 512 --warmup 10 --steps 40 --precision bf16
for i in 1 2 3; do
  run "resnet50-bf16-cl-repeat$i" 240 "${R50[@]}" --precision bf16 --channels-last
done

echo "=== summary (each column is one run; differences are against the first)"
main=()
for n in resnet50-fp32 resnet50-tf32-cl resnet50-bf16-cl resnet50-bf16-cl-compile; do
  [ -f "$OUT/$n.json" ] && main+=("$OUT/$n.json")
done
[ ${#main[@]} -gt 0 ] && rd compare --markdown --anchors "${main[@]}" | tee "$OUT/summary-resnet50.md"
others=()
for n in vit_b_16-bf16 gpt2-bf16 resnet50-bf16-cl resnet50-bf16-cl-repeat1 \
         resnet50-bf16-cl-repeat2 resnet50-bf16-cl-repeat3; do
  [ -f "$OUT/$n.json" ] && others+=("$OUT/$n.json")
done
[ ${#others[@]} -gt 0 ] && rd compare --markdown "${others[@]}" | tee "$OUT/summary-others.md"

"$PY" - "$OUT" <<'PY'
import glob, json, os, sys
rates = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "resnet50-bf16-cl*.json"))):
    if "compile" not in path:
        rates.append(json.load(open(path))["metrics"]["throughput"]["median"])
if len(rates) > 1:
    mean = sum(rates) / len(rates)
    print(f"bf16+channels_last run-to-run: {len(rates)} runs, median img/s "
          + ", ".join(f"{r:,.1f}" for r in rates)
          + f"; spread (max-min)/mean {(max(rates) - min(rates)) / mean:.2%}")
PY
echo "results in $OUT; $failed run(s) failed"
exit $(( failed > 0 ))
)

cmd_grid() (
export PYTHONUNBUFFERED=1
DB=/tmp/grid-state/grid.db
[ -f "$DB" ] || { mkdir -p /tmp/grid-state && cp .carry/grid/grid.db "$DB" && chmod 644 "$DB"; } \
  || exit 1
"$SELF" install || exit 1
start=$SECONDS
timeout -s INT "${LIMIT:-540}" python3 -m rocmdoctor tune --model resnet50 --batch-size 128 \
  --batch-sizes 128,256 --max-trials 128 --budget "${BUDGET:-10h}" \
  --confirm-rounds 2 --confirm-top 1 --study grid-resnet50 --storage "sqlite:///$DB" \
  --gpus "${GPUS:-0}" --compile-cache /tmp/grid-inductor \
  --output /tmp/grid.json 2>&1 | tail -n 40
echo "grid part exit ${PIPESTATUS[0]} after $((SECONDS - start)) s"
cp "$DB" "$OUT/grid.db"
[ -f /tmp/grid.json ] && cp /tmp/grid.json "$OUT/grid.json"
python3 - "$DB" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = con.execute("select state, count(*) from trials group by state").fetchall()
print("trials by state:", dict(rows))
PY
)

cmd_multi() (
export PYTHONUNBUFFERED=1
R=/tmp/multi; mkdir -p "$R"
"$SELF" install || exit 1
env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM)_' | sort > "$R/env-nccl.txt"
nvidia-smi topo -m > "$R/topo.txt" 2>&1
nvidia-smi > "$R/nvidia-smi.txt" 2>&1
s=$SECONDS; python3 -m rocmdoctor check --collectives -v > "$R/check-collectives.txt" 2>&1
echo "exit $? after $((SECONDS - s)) s" >> "$R/check-collectives.txt"
s=$SECONDS; python3 -m rocmdoctor check --only collectives -v > "$R/check-only.txt" 2>&1
echo "exit $? after $((SECONDS - s)) s" >> "$R/check-only.txt"
NCCL_P2P_DISABLE=1 python3 -m rocmdoctor check --only collectives -v > "$R/check-p2p-off.txt" 2>&1
echo "exit $?" >> "$R/check-p2p-off.txt"
python3 -m rocmdoctor snapshot --collectives -o "$R/h200x2-snapshot.json.gz" > "$R/snapshot.txt" 2>&1
python3 -m rocmdoctor check --from "$R/h200x2-snapshot.json.gz" --collectives --json \
  -o "$R/check-replay.json"
tail -n 3 "$R"/check-*.txt
[ "${OVERHEAD:-1}" = 1 ] && "$SELF" overhead 2>&1 | tee "$R/overhead.txt"
tar czf "$OUT/multi.tgz" -C /tmp multi
)

cmd_overhead() (
export PYTHONUNBUFFERED=1
"$SELF" install || exit 1
B="python3 -m rocmdoctor bench --model resnet50 --device cuda --batch-size 128 --precision bf16 --channels-last --compile --warmup 30 --steps 150"
on() { echo "bench, power sampling on:  $($B 2>/dev/null | grep -E '^(throughput|GPU busy)' | tr '\n' ' ')"; }
off() { echo "bench, extras=false:       $($B --set extras=false 2>/dev/null | grep -E '^throughput' | tr '\n' ' ')"; }
for round in ${ROUNDS:-1 2 3}; do
  echo "== round $round"
  python3 scripts/plain_resnet50.py 128 2>/dev/null | tail -3
  if [ $((round % 2)) = 1 ]; then on; off; else off; on; fi
done
)

cmd_round2() (
export PYTHONUNBUFFERED=1
R=/tmp/round2; mkdir -p "$R"
"$SELF" install || exit 1
python3 -m rocmdoctor snapshot --collectives -o "$R/h200x2-snapshot.json.gz" > "$R/snapshot.txt" 2>&1
python3 -m rocmdoctor check --from "$R/h200x2-snapshot.json.gz" --only collectives -v | tee "$R/check.txt"
TRIALS=${TRIALS:-6} timeout 380 "$SELF" tune-gpus
mv /tmp/tune-gpus "$R/" 2>/dev/null
ROUNDS="1 2" timeout 150 "$SELF" overhead 2>&1 | tee "$R/overhead.txt"
tar czf "$OUT/round2.tgz" -C /tmp round2
)

cmd_tune_evidence() (
export PYTHONUNBUFFERED=1
W=/tmp/rocmdoctor-tune; mkdir -p "$W"
PY=python3
"$SELF" install || exit 1
start=$SECONDS
timeout -s INT "${TUNE_LIMIT:-560}" $PY -m rocmdoctor tune --model resnet50 --batch-size 128 \
  --batch-sizes 128,256 --budget "${BUDGET:-8m}" ${TUNE_EXTRA:-} \
  --storage "sqlite:///$W/study.db" --study h200-resnet50 \
  --output "$W/tune.json" --export "$W/best.env" --html "$W/tune.html" 2>&1 | tee -a "$W/tune.log"
echo "tune exit ${PIPESTATUS[0]} after $((SECONDS - start)) s"
tar czf "$OUT/tune.tgz" -C "$W" .
)

cmd_tune_beside_grid() (
export PYTHONUNBUFFERED=1
C=/tmp/collectives; mkdir -p "$C"
"$SELF" install || exit 1
python3 -m rocmdoctor snapshot --collectives -o "$C/h200x2-snapshot.json.gz" > "$C/snapshot.txt" 2>&1
python3 -m rocmdoctor check --from "$C/h200x2-snapshot.json.gz" --only collectives -v --json \
  > "$C/check.json"
python3 -m rocmdoctor check --from "$C/h200x2-snapshot.json.gz" --only collectives -v | tee "$C/check.txt"
tar czf "$OUT/collectives.tgz" -C /tmp collectives
LIMIT=${LIMIT:-520}
CUDA_VISIBLE_DEVICES=0 TUNE_LIMIT=$LIMIT BUDGET=${BUDGET:-7m} \
  TUNE_EXTRA="--confirm-rounds 2 --confirm-max-rounds 3 --confirm-top 1" \
  "$SELF" tune-evidence > /tmp/tune-run.log 2>&1 &
GPUS=1 LIMIT=$LIMIT "$SELF" grid > /tmp/grid-run.log 2>&1 &
wait
tail -n 30 /tmp/grid-run.log
tail -n 60 /tmp/tune-run.log
)

cmd_tune_gpus() (
export PYTHONUNBUFFERED=1
R=/tmp/tune-gpus; mkdir -p "$R"
"$SELF" install || exit 1
S="--model resnet50 --batch-size 128 --space precision,channels_last --batch-sizes 128,256"
S="$S --max-trials ${TRIALS:-8} --budget 10m --confirm-rounds 2 --confirm-max-rounds 2"
S="$S --confirm-top 1"
for gpus in 0 0,1; do
  name=gpus-${gpus/,/-}
  s=$SECONDS
  python3 -m rocmdoctor tune $S --gpus "$gpus" --study "$name" \
    --storage "sqlite:///$R/$name.db" --output "$R/$name.json" > "$R/$name.out" 2> "$R/$name.log"
  echo "tune --gpus $gpus: exit $? after $((SECONDS - s)) s"
  tail -n 25 "$R/$name.out"
done
[ -n "${OUT:-}" ] && tar czf "$OUT/tune-gpus.tgz" -C /tmp tune-gpus
)

cmd_deep() (
export PYTHONUNBUFFERED=1
# the results go to a folder packed into one tarball at the end: a call brings back 8 files
PACK="${OUT:-}"
OUT=/tmp/rocmdoctor-deep; rm -rf "$OUT"; mkdir -p "$OUT"
PY="${PYTHON:-python3}"
START=$SECONDS
if [ -n "${SMOKE:-}" ]; then
  export ROCMDOCTOR_TESTING=1 ROCMDOCTOR_DEEP_CPU=1
else
  "$SELF" install || exit 1
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
[ -n "$PACK" ] && tar czf "$PACK/deep.tgz" -C "$OUT" . && echo "packed into $PACK/deep.tgz"
)

cmd=${1:-}; shift || true
case $cmd in
install)
  python3 -c "import rocmdoctor, optuna" 2>/dev/null && exit 0
  python3 -m pip install -q --no-deps --no-index --upgrade .carry/wheels/*.whl 2>&1 | tail -2
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
  python3 -c "import rocmdoctor, optuna, typer, rich, psutil; print('rocmdoctor', \
rocmdoctor.__version__, 'optuna', optuna.__version__, 'typer', typer.__version__, \
'psutil', psutil.__version__)" ;;
checks)
  n=${1:-3}
  for i in $(seq "$n"); do
    s=$(date +%s%N); python3 -m rocmdoctor check > "$OUT/check-$i.txt" 2>&1; rc=$?
    c=$(( ($(date +%s%N) - s) / 1000000 ))
    s=$(date +%s%N); python3 -c "import torch; torch.cuda.is_available()"
    t=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "run $i: check exit $rc in $c ms; import torch in $t ms" | tee -a "$OUT/check-vs-torch.txt"
  done ;;
checktime)
  # where `rocmdoctor check`'s time goes: check, a bare import torch and the probe child alone
  # (the time of each stage it marks on stderr), alternated N times; then the machine checks
  # alone (the probe's checks skipped) and an import-time profile of one check
  n=${1:-3}
  ${PY:-python3} - "$n" "$OUT" <<'PY'
import json, os, statistics, subprocess, sys, time
n, out = int(sys.argv[1]), sys.argv[2]
MARK = "ROCMDOCTOR_PROBE_PARTIAL "
def wall(argv):
    t = time.perf_counter(); rc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL).returncode
    return time.perf_counter() - t, rc
def probe():
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "doctor/host/probe_child.py"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    stages = []
    for line in p.stderr:
        if line.startswith(MARK):
            stages.append((json.loads(line[len(MARK):])["stage"], time.perf_counter() - t))
    p.wait(); stdout = p.stdout.read()
    total = time.perf_counter() - t
    smoke = [d.get("smoke", {}).get("seconds") for d in json.loads(stdout)["torch"]["devices"]]
    return total, stages, smoke
rows = []
for i in range(n):
    c, rc = wall([sys.executable, "-m", "rocmdoctor", "check"])
    t, _ = wall([sys.executable, "-c", "import torch; torch.cuda.is_available()"])
    p, stages, smoke = probe()
    rows.append((c, t, p))
    print(f"run {i + 1}: check {c * 1000:,.0f} ms (exit {rc}); import torch {t * 1000:,.0f} ms; "
          f"ratio {c / t:.2f}; probe alone {p * 1000:,.0f} ms, smoke {smoke}")
    print("   probe stages (ms from spawn): " + ", ".join(f"{s} {x * 1000:,.0f}" for s, x in stages))
print(f"median ratio {statistics.median(r[0] / r[1] for r in rows):.2f}; "
      f"median check {statistics.median(r[0] for r in rows) * 1000:,.0f} ms, "
      f"import torch {statistics.median(r[1] for r in rows) * 1000:,.0f} ms, "
      f"probe {statistics.median(r[2] for r in rows) * 1000:,.0f} ms")
m, _ = wall([sys.executable, "-m", "rocmdoctor", "check", "--skip",
             "torch-install,torch-rocm-match,torch-arch-support,torch-device,torchvision-match"])
print(f"machine checks alone (no probe): {m * 1000:,.0f} ms")
with open(os.path.join(out, "check-importtime.txt"), "w") as fh:
    subprocess.run([sys.executable, "-X", "importtime", "-m", "rocmdoctor", "check"],
                   stdout=subprocess.DEVNULL, stderr=fh)
PY
  ;;
witness-start)
  stat -c 'folder %n inode %i' "$PWD" | tee /tmp/witness.txt
  setsid bash -c "cd '$PWD'; exec sleep 3000" < /dev/null > /dev/null 2>&1 &
  echo "pid $!" | tee -a /tmp/witness.txt ;;
witness-check)
  cat /tmp/witness.txt; stat -c 'folder %n inode %i now' "$PWD"
  pid=$(awk '/^pid/ {print $2}' /tmp/witness.txt)
  echo "the witness's working folder: $(readlink "/proc/$pid/cwd")"
  ( cd "/proc/$pid/cwd" && echo "in the old folder, this environment:" &&
    python3 -c "import torch; print('import torch: ok', torch.__version__)"; echo "exit $?" )
  ( cd "/proc/$pid/cwd" && echo "in the old folder, a clean environment:" &&
    env -i PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" HOME="$HOME" \
      python3 -c "import torch; print('import torch: ok')"
    echo "exit $?" )
  ( cd "$PWD" && echo "in the new folder:" &&
    python3 -c "import torch; print('import torch: ok', torch.__version__)"; echo "exit $?" )
  ;;
start)
  name=$1; shift; W=/tmp/rocmdoctor-$name
  bash scripts/device.sh install || exit 1
  mkdir -p "$W"
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__)'
    echo "rocmdoctor tune $* --output tune.json --export best.env --html tune.html"
    date -u +%FT%TZ; } > "$W/about.txt" 2>&1
  cat "$W/about.txt"
  PYTHONUNBUFFERED=1 setsid bash -c "cd '$PWD'; start=\$SECONDS; python3 -m rocmdoctor tune $* \
    --verbose --output '$W/tune.json' --export '$W/best.env' --html '$W/tune.html' \
    > '$W/summary.txt' 2> '$W/progress.txt'; echo \"exit \$? after \$((SECONDS - start)) s\" \
    > '$W/done'" < /dev/null > /dev/null 2>&1 &
  sleep 3
  tune=$(pgrep -f "^python3 -m rocmdoctor tune" | head -1)
  # beside the tune, every 5 s: its descriptors, threads, descendants, working folder, free
  # memory, /dev/shm and the cache folder
  setsid python3 - "$tune" "$W" > "$W/monitor.txt" 2>&1 < /dev/null <<'PY' &
import os, shutil, subprocess, sys, time
import psutil
pid, folder = int(sys.argv[1]), sys.argv[2]
tune, t0 = psutil.Process(pid), time.monotonic()
def mb(path):
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout
    return (out.split() or ["?"])[0]
while not os.path.exists(os.path.join(folder, "done")) and tune.is_running():
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        kids = tune.children(recursive=True)
        print(f"t={time.monotonic() - t0:.0f} fds={tune.num_fds()} threads={tune.num_threads()}"
              f" descendants={len(kids)} cwd={'deleted' if cwd.endswith(' (deleted)') else 'alive'}"
              f" memavail={psutil.virtual_memory().available >> 20}MB"
              f" shm={mb('/dev/shm')}MB cache={mb(os.path.expanduser('~/.cache/rocmdoctor'))}MB",
              flush=True)
    except (psutil.Error, OSError) as exc:
        print(f"t={time.monotonic() - t0:.0f} {exc}", flush=True)
    time.sleep(5)
PY
  sleep 2; tail -3 "$W/progress.txt" ;;
wait)
  name=$1 limit=$2 start=$SECONDS; W=/tmp/rocmdoctor-$name
  while [ ! -e "$W/done" ] && [ $((SECONDS - start)) -lt "$limit" ]; do sleep 5; done
  tail -4 "$W/progress.txt"; tail -2 "$W/monitor.txt"
  if [ -e "$W/done" ]; then
    cat "$W/done" "$W/summary.txt"
    tar czf "$OUT/$name.tar.gz" -C "$W" .
  else
    echo "still running after $((SECONDS - start)) s"
  fi ;;
data-follow)
  name=$1; W=/tmp/rocmdoctor-$name
  line=$(python3 - "$W/tune.json" <<'PY'
import dataclasses, json, shlex, sys
from rocmdoctor.tuners import crashes, knobs
from rocmdoctor.tuners.bench.spec import BenchSpec
d = json.load(open(sys.argv[1]))
best = (d.get("verdict") or {}).get("best_overall") or {}
number = best.get("trial") if isinstance(best, dict) else None
ok = [t for t in d["trials"] if t["state"] == "ok" and not t["baseline"]]
trial = next((t for t in ok if t["number"] == number), None) or max(ok, key=lambda t: t["throughput"])
loader = {"num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "gpu_decode",
          "loader_channels_last"}
spec = BenchSpec.from_dict({k: v for k, v in d["workload"].items() if k != "data"})
fields, settings = {}, {k: v for k, v in spec.settings.items() if k not in loader}
for name, label in trial["params"].items():
    knob = next((k for k in knobs.KNOBS if k.name == name), None)
    if knob is None or name in loader:
        continue
    try:
        value = knob.value(label)
    except KeyError:  # choices found at plan time: a count, a precision, or "default"
        value = None if label == "default" else int(label) if label.isdigit() else label
    if knob.kind == knobs.SPEC:
        fields[name] = value
    elif knob.kind == knobs.SETTING and value is not None:
        settings[name] = value
spec = dataclasses.replace(spec, settings=settings, **fields)
env = {k: v for k, v in trial["env"].items() if not k.endswith("_CACHE_DIR")}
print(f"# trial {trial['number']}: {trial['throughput']:.1f} {trial['unit']}/s with its loader",
      file=sys.stderr)
print(crashes.reproduce_command(spec, env))
PY
) || exit 1
  echo "synthetic tensors, the pick's model settings: $line" | tee "$OUT/$name-synthetic.txt"
  eval "timeout 300 $line --json $OUT/$name-synthetic.json" 2>&1 | tee -a "$OUT/$name-synthetic.txt" | tail -25 ;;
deep) cmd_deep "$@" ;;
evidence) cmd_evidence "$@" ;;
bench) cmd_bench "$@" ;;
grid) cmd_grid "$@" ;;
multi) cmd_multi "$@" ;;
overhead) cmd_overhead "$@" ;;
round2) cmd_round2 "$@" ;;
tune-evidence) cmd_tune_evidence "$@" ;;
tune-beside-grid) cmd_tune_beside_grid "$@" ;;
tune-gpus) cmd_tune_gpus "$@" ;;
*)
  sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 2 ;;
esac
