#!/usr/bin/env bash
# On nvidia-h200-x2: the collectives check (its peer copies in their own process), then the
# seeded tune evidence (scripts/device_tune.sh) on GPU 0 while the exhaustive grid
# (scripts/device_grid.sh) goes on on GPU 1, both stopped by LIMIT seconds. Results:
# $OUT/collectives.tgz, $OUT/tune.tgz, $OUT/grid.db.
set -uo pipefail
export PYTHONUNBUFFERED=1
C=/tmp/collectives; mkdir -p "$C"
bash scripts/device_install.sh || exit 1
python3 -m rocmdoctor snapshot --collectives -o "$C/h200x2-snapshot.json.gz" > "$C/snapshot.txt" 2>&1
python3 -m rocmdoctor check --from "$C/h200x2-snapshot.json.gz" --only collectives -v --json \
  > "$C/check.json"
python3 -m rocmdoctor check --from "$C/h200x2-snapshot.json.gz" --only collectives -v | tee "$C/check.txt"
tar czf "$OUT/collectives.tgz" -C /tmp collectives
LIMIT=${LIMIT:-520}
CUDA_VISIBLE_DEVICES=0 TUNE_LIMIT=$LIMIT BUDGET=${BUDGET:-7m} \
  TUNE_EXTRA="--confirm-rounds 2 --confirm-max-rounds 3 --confirm-top 1" \
  bash scripts/device_tune.sh > /tmp/tune-run.log 2>&1 &
GPUS=1 LIMIT=$LIMIT bash scripts/device_grid.sh > /tmp/grid-run.log 2>&1 &
wait
tail -n 30 /tmp/grid-run.log
tail -n 60 /tmp/tune-run.log
