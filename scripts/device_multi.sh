#!/usr/bin/env bash
# On a machine with two GPUs (nvidia-h200-x2): `rocmdoctor check --collectives` live, with
# NCCL_P2P_DISABLE=1, and a snapshot that records the run (replayed by the tests); then the
# bench-overhead run of scripts/device_overhead.sh on GPU 0. Results: $OUT/multi.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
R=/tmp/multi; mkdir -p "$R"
bash scripts/device_install.sh || exit 1
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
[ "${OVERHEAD:-1}" = 1 ] && bash scripts/device_overhead.sh 2>&1 | tee "$R/overhead.txt"
tar czf "$OUT/multi.tgz" -C /tmp multi
