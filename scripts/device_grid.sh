#!/usr/bin/env bash
# One part of the exhaustive grid over tune's default CUDA space for ResNet-50 (128
# configurations, BruteForce sampler at --max-trials 128), to compare the tuner's pick with
# the grid's best. The study database travels between sessions: name `.carry` in the call's
# carry list; the updated database comes back as $OUT/grid.db; copy it to .carry/grid/grid.db.
# On a machine still warm from the last part, the database in /tmp/grid-state (newer than the
# carried one) and the compile cache are used instead. Each part runs until LIMIT seconds
# (then Ctrl-C: the running trials are requeued) and the next part resumes where it stopped.
# scripts/grid_report.py reads the database: what is measured, what is not, the comparison.
# GPUS=0,1 measures two configurations at a time; every trial shares one TorchInductor cache
# (--compile-cache), which shortens compiled trials but changes no steady-state figure.
set -uo pipefail
export PYTHONUNBUFFERED=1
DB=/tmp/grid-state/grid.db
[ -f "$DB" ] || { mkdir -p /tmp/grid-state && cp .carry/grid/grid.db "$DB" && chmod 644 "$DB"; } \
  || exit 1
bash scripts/device_install.sh || exit 1
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
