#!/usr/bin/env bash
# On two GPUs (nvidia-h200-x2): the same tune on one GPU, then on both (--gpus 0,1); a small
# eager space so both finish in one call. Results (JSON, logs) in $OUT/tune-gpus.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
R=/tmp/tune-gpus; mkdir -p "$R"
bash scripts/device_install.sh || exit 1
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
