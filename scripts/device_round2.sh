#!/usr/bin/env bash
# Second call on nvidia-h200-x2: the collectives check again (peer copies now timed with
# both devices synchronised), the tune on one GPU and on two, then the bench overhead pairs
# with power sampled at 10 Hz. Results: $OUT/round2.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
R=/tmp/round2; mkdir -p "$R"
bash scripts/device_install.sh || exit 1
python3 -m rocmdoctor snapshot --collectives -o "$R/h200x2-snapshot.json.gz" > "$R/snapshot.txt" 2>&1
python3 -m rocmdoctor check --from "$R/h200x2-snapshot.json.gz" --only collectives -v | tee "$R/check.txt"
TRIALS=${TRIALS:-6} timeout 380 bash scripts/device_tune_gpus.sh
mv /tmp/tune-gpus "$R/" 2>/dev/null
ROUNDS="1 2" timeout 150 bash scripts/device_overhead.sh 2>&1 | tee "$R/overhead.txt"
tar czf "$OUT/round2.tgz" -C /tmp round2
