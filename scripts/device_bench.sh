#!/usr/bin/env bash
# One-shot GPU benchmark run for the lead, on a machine with a GPU, torch and torchvision.
#   pip install --no-deps -e . && bash scripts/device_bench.sh        (results under $OUT)
# Runs: ResNet-50 batch 128 in fp32 (strict), tf32+channels_last, bf16+channels_last,
# bf16+channels_last+torch.compile; ViT-B/16 bf16; GPT-2-small bf16; then the
# bf16+channels_last configuration 3 more times for the run-to-run spread. Each run is a fresh
# process (rocmdoctor bench); each result JSON lands in $OUT; a table is printed at the end.
# Budget: about 5 minutes on an H200 (torch.compile of ResNet-50 takes about a minute).
# SMOKE=1 replaces every run by a tiny CPU run (later flags win), to check the plumbing.
set -uo pipefail

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
