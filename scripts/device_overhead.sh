#!/usr/bin/env bash
# Is `rocmdoctor bench` slower than a plain loop on a host-bound configuration (ResNet-50,
# batch 128, bf16, channels_last, torch.compile on an H200)? Interleaved, twice: the plain
# loop (3 x 50 steps), the bench with its power sampler, the bench without it.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -c "import rocmdoctor" 2>/dev/null || {
  python3 -m pip install -q --no-deps --no-index .carry/wheels/*.whl
  python3 -m pip install -q --no-deps --no-build-isolation -e .
}
B="python3 -m rocmdoctor bench --model resnet50 --device cuda --batch-size 128 --precision bf16 --channels-last --compile --warmup 30 --steps 150"
for round in 1 2; do
  echo "== round $round"
  python3 scripts/plain_resnet50.py 128 2>/dev/null | tail -3
  echo "bench, power sampling on:  $($B 2>/dev/null | grep -E '^(throughput|GPU busy)' | tr '\n' ' ')"
  echo "bench, extras=false:       $($B --set extras=false 2>/dev/null | grep -E '^throughput' | tr '\n' ' ')"
done
