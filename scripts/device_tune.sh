#!/usr/bin/env bash
# The H200 tune evidence: rocmdoctor tune --model resnet50 --batch-sizes 128,256 on the default
# space, its outputs (JSON, env file, HTML, the study database) in one tarball under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1
W=/tmp/rocmdoctor-tune; mkdir -p "$W"
PY=python3
bash scripts/device_install.sh || exit 1
start=$SECONDS
timeout -s INT "${TUNE_LIMIT:-560}" $PY -m rocmdoctor tune --model resnet50 --batch-size 128 \
  --batch-sizes 128,256 --budget "${BUDGET:-8m}" ${TUNE_EXTRA:-} \
  --storage "sqlite:///$W/study.db" --study h200-resnet50 \
  --output "$W/tune.json" --export "$W/best.env" --html "$W/tune.html" 2>&1 | tee -a "$W/tune.log"
echo "tune exit ${PIPESTATUS[0]} after $((SECONDS - start)) s"
tar czf "$OUT/tune.tgz" -C "$W" .
