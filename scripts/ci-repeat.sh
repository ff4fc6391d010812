#!/usr/bin/env bash
# Run CI's own `.ci/run` N times in a row, each on a fresh clone of HEAD (as CI does), and
# print each run's result and wall time, then the median and the maximum: the evidence that
# a green run is always green (docs/operations.md, "A green run means the same").
#   scripts/ci-repeat.sh 10            # ten runs; logs in $TMPDIR/homebot-ci-repeat/
#   scripts/ci-repeat.sh 5 --load      # five runs, each beside a second CPU load: one
#                                      # `yes > /dev/null` per core, for the whole run
# Stops at the first failing run and says where its log is.
set -euo pipefail
n="${1:-10}"
load=0
if [ "${2:-}" = "--load" ]; then load=1; fi
hogs=()
stop_load() { for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done; hogs=(); }
trap stop_load EXIT
repo="$(cd "$(dirname "$0")/.." && pwd)"
commit="$(git -C "$repo" rev-parse --short HEAD)"
out="${TMPDIR:-/tmp}/homebot-ci-repeat"
mkdir -p "$out"
times=()
for i in $(seq 1 "$n"); do
  clone="$out/clone-$i"
  rm -rf "$clone"
  git clone --quiet "$repo" "$clone"
  git -C "$clone" checkout --quiet "$commit" # the same commit every run, whatever HEAD does meanwhile
  if (( load )); then
    for _ in $(seq 1 "$(nproc)"); do yes >/dev/null & hogs+=("$!"); done
  fi
  start=$(date +%s)
  if (cd "$clone" && .ci/run) >"$out/run-$i.log" 2>&1; then
    t=$(( $(date +%s) - start ))
    stop_load
    times+=("$t")
    passed=$(grep -ho "test result: ok. [0-9]* passed" "$out/run-$i.log" | awk '{s+=$4} END {print s}')
    printf 'run %2d at %s: green in %d s (%s tests passed; load %s)\n' "$i" "$commit" "$t" "$passed" "$(cut -d' ' -f1-3 /proc/loadavg)"
    rm -rf "$clone"
  else
    stop_load
    printf 'run %2d at %s: FAILED after %d s; log: %s\n' "$i" "$commit" "$(( $(date +%s) - start ))" "$out/run-$i.log"
    exit 1
  fi
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
mid=$(( ${#sorted[@]} / 2 ))
if (( ${#sorted[@]} % 2 )); then median=${sorted[$mid]}; else median=$(( (sorted[mid-1] + sorted[mid]) / 2 )); fi
echo "$n green runs at $commit$( (( load )) && echo ' under load'): median $median s, max ${sorted[-1]} s"
