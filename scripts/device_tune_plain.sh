#!/usr/bin/env bash
# The plain tune on the device machine, longer than one call: `start NAME ARGS...` runs
# `rocmdoctor tune ARGS... --output/--export/--html` in its own session (it outlives the
# call), `wait NAME SECONDS` waits for it up to SECONDS, then packs what it wrote into
# $OUT/NAME.tar.gz (one file a run: a call brings back at most 8 files).
#   bash scripts/device_tune_plain.sh start plain --model resnet50
#   bash scripts/device_tune_plain.sh wait plain 560
set -uo pipefail
mode=$1 name=$2; shift 2
W=/tmp/rocmdoctor-$name
case $mode in
start)
  bash scripts/device_install.sh || exit 1
  mkdir -p "$W"
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__)'
    echo "rocmdoctor tune $* --output tune.json --export best.env --html tune.html"
    date -u +%FT%TZ; } > "$W/about.txt" 2>&1
  cat "$W/about.txt"
  PYTHONUNBUFFERED=1 setsid bash -c "cd '$PWD'; start=\$SECONDS; python3 -m rocmdoctor tune $* \
    --output '$W/tune.json' --export '$W/best.env' --html '$W/tune.html' > '$W/summary.txt' \
    2> '$W/progress.txt'; echo \"exit \$? after \$((SECONDS - start)) s\" > '$W/done'" \
    < /dev/null > /dev/null 2>&1 &
  sleep 5; tail -3 "$W/progress.txt" ;;
wait)
  limit=$1 start=$SECONDS
  while [ ! -e "$W/done" ] && [ $((SECONDS - start)) -lt "$limit" ]; do sleep 5; done
  tail -5 "$W/progress.txt"
  if [ -e "$W/done" ]; then
    cat "$W/done" "$W/summary.txt"
    tar czf "$OUT/$name.tar.gz" -C "$W" .
  else
    echo "still running after $((SECONDS - start)) s"
  fi ;;
esac
