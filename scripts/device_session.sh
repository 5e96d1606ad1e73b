#!/usr/bin/env bash
# What the NVIDIA H200 evidence run does, in one call: install rocmdoctor (with carried
# wheels), check / snapshot / report, the timing figures, the GPU-marked tests, the bench
# runs (scripts/device_bench.sh); everything lands in one tarball under $OUT.
set -uo pipefail
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
  OUT="$W/bench" bash scripts/device_bench.sh 2>&1 | tee "$W/bench.txt" | tail -n 60
fi
tar czf "$OUT/evidence.tgz" -C "$W" .
ls -la "$OUT"
