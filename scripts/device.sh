#!/usr/bin/env bash
# The runs on a lent GPU machine, as subcommands. Each runs from this checkout's root there;
# a run longer than one call starts in its own session (setsid) and later calls wait for it.
#
#   bash scripts/device.sh install               rocmdoctor and the wheels the image lacks
#                                                (.carry/wheels: optuna, the newest typer,
#                                                rich, psutil, packaging), editable
#   bash scripts/device.sh checks N              `rocmdoctor check` and a bare `import torch`,
#                                                alternated N times, each timed (check-vs-torch.txt)
#   bash scripts/device.sh witness-start         a process that keeps this checkout's folder as
#                                                its working folder, to see whether the next call
#                                                replaces that folder
#   bash scripts/device.sh witness-check         whether it was replaced, and what `import torch`
#                                                does in the old folder and in the new one, with
#                                                a clean environment and with this one
#   bash scripts/device.sh start NAME ARGS...    `rocmdoctor tune ARGS --output/--export/--html`
#                                                in its own session, with a monitor beside it
#   bash scripts/device.sh wait NAME SECONDS     wait for it up to SECONDS; when it has ended,
#                                                pack what it wrote into $OUT/NAME.tar.gz
set -uo pipefail
cmd=${1:-}; shift || true
case $cmd in
install)
  python3 -c "import rocmdoctor, optuna" 2>/dev/null && exit 0
  python3 -m pip install -q --no-deps --no-index --upgrade .carry/wheels/*.whl 2>&1 | tail -2
  python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
  python3 -c "import rocmdoctor, optuna, typer, rich, psutil; print('rocmdoctor', \
rocmdoctor.__version__, 'optuna', optuna.__version__, 'typer', typer.__version__, \
'psutil', psutil.__version__)" ;;
checks)
  n=${1:-3}
  for i in $(seq "$n"); do
    s=$(date +%s%N); python3 -m rocmdoctor check > "$OUT/check-$i.txt" 2>&1; rc=$?
    c=$(( ($(date +%s%N) - s) / 1000000 ))
    s=$(date +%s%N); python3 -c "import torch; torch.cuda.is_available()"
    t=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "run $i: check exit $rc in $c ms; import torch in $t ms" | tee -a "$OUT/check-vs-torch.txt"
  done ;;
witness-start)
  stat -c 'folder %n inode %i' "$PWD" | tee /tmp/witness.txt
  setsid bash -c "cd '$PWD'; exec sleep 3000" < /dev/null > /dev/null 2>&1 &
  echo "pid $!" | tee -a /tmp/witness.txt ;;
witness-check)
  cat /tmp/witness.txt; stat -c 'folder %n inode %i now' "$PWD"
  pid=$(awk '/^pid/ {print $2}' /tmp/witness.txt)
  echo "the witness's working folder: $(readlink "/proc/$pid/cwd")"
  ( cd "/proc/$pid/cwd" && echo "in the old folder, this environment:" &&
    python3 -c "import torch; print('import torch: ok', torch.__version__)"; echo "exit $?" )
  ( cd "/proc/$pid/cwd" && echo "in the old folder, a clean environment:" &&
    env -i PATH="$(dirname "$(command -v python3)"):/usr/bin:/bin" HOME="$HOME" \
      python3 -c "import torch; print('import torch: ok')"
    echo "exit $?" )
  ( cd "$PWD" && echo "in the new folder:" &&
    python3 -c "import torch; print('import torch: ok', torch.__version__)"; echo "exit $?" )
  ;;
start)
  name=$1; shift; W=/tmp/rocmdoctor-$name
  bash scripts/device.sh install || exit 1
  mkdir -p "$W"
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__)'
    echo "rocmdoctor tune $* --output tune.json --export best.env --html tune.html"
    date -u +%FT%TZ; } > "$W/about.txt" 2>&1
  cat "$W/about.txt"
  PYTHONUNBUFFERED=1 setsid bash -c "cd '$PWD'; start=\$SECONDS; python3 -m rocmdoctor tune $* \
    --verbose --output '$W/tune.json' --export '$W/best.env' --html '$W/tune.html' \
    > '$W/summary.txt' 2> '$W/progress.txt'; echo \"exit \$? after \$((SECONDS - start)) s\" \
    > '$W/done'" < /dev/null > /dev/null 2>&1 &
  sleep 3
  tune=$(pgrep -f "^python3 -m rocmdoctor tune" | head -1)
  # beside the tune, every 5 s: its descriptors, threads, descendants, working folder, free
  # memory, /dev/shm and the cache folder
  setsid python3 - "$tune" "$W" > "$W/monitor.txt" 2>&1 < /dev/null <<'PY' &
import os, shutil, subprocess, sys, time
import psutil
pid, folder = int(sys.argv[1]), sys.argv[2]
tune, t0 = psutil.Process(pid), time.monotonic()
def mb(path):
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout
    return (out.split() or ["?"])[0]
while not os.path.exists(os.path.join(folder, "done")) and tune.is_running():
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        kids = tune.children(recursive=True)
        print(f"t={time.monotonic() - t0:.0f} fds={tune.num_fds()} threads={tune.num_threads()}"
              f" descendants={len(kids)} cwd={'deleted' if cwd.endswith(' (deleted)') else 'alive'}"
              f" memavail={psutil.virtual_memory().available >> 20}MB"
              f" shm={mb('/dev/shm')}MB cache={mb(os.path.expanduser('~/.cache/rocmdoctor'))}MB",
              flush=True)
    except (psutil.Error, OSError) as exc:
        print(f"t={time.monotonic() - t0:.0f} {exc}", flush=True)
    time.sleep(5)
PY
  sleep 2; tail -3 "$W/progress.txt" ;;
wait)
  name=$1 limit=$2 start=$SECONDS; W=/tmp/rocmdoctor-$name
  while [ ! -e "$W/done" ] && [ $((SECONDS - start)) -lt "$limit" ]; do sleep 5; done
  tail -4 "$W/progress.txt"; tail -2 "$W/monitor.txt"
  if [ -e "$W/done" ]; then
    cat "$W/done" "$W/summary.txt"
    tar czf "$OUT/$name.tar.gz" -C "$W" .
  else
    echo "still running after $((SECONDS - start)) s"
  fi ;;
*)
  sed -n '2,22p' "$0"; exit 2 ;;
esac
