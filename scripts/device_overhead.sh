#!/usr/bin/env bash
# Is `rocmdoctor bench` slower than a plain loop on a host-bound configuration (ResNet-50,
# batch 128, bf16, channels_last, torch.compile on an H200)? Interleaved, in alternating
# order: the plain loop (3 x 50 steps), the bench with its power sampler (now a separate
# process), the bench with --set extras=false (no sampler, FLOP count or GEMM peak).
set -uo pipefail
export PYTHONUNBUFFERED=1
bash scripts/device_install.sh || exit 1
B="python3 -m rocmdoctor bench --model resnet50 --device cuda --batch-size 128 --precision bf16 --channels-last --compile --warmup 30 --steps 150"
on() { echo "bench, power sampling on:  $($B 2>/dev/null | grep -E '^(throughput|GPU busy)' | tr '\n' ' ')"; }
off() { echo "bench, extras=false:       $($B --set extras=false 2>/dev/null | grep -E '^throughput' | tr '\n' ' ')"; }
for round in ${ROUNDS:-1 2 3}; do
  echo "== round $round"
  python3 scripts/plain_resnet50.py 128 2>/dev/null | tail -3
  if [ $((round % 2)) = 1 ]; then on; off; else off; on; fi
done
