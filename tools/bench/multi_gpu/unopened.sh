#!/usr/bin/env bash
# Default sorts (--devices auto) of files of one GPU chunk on a host of several GPUs: this
# gpusort, which opens the first GPU alone for them, against BEFORE (an older gpusort that
# opens every selected GPU) and against this one with --devices 0, interleaved, page cache
# warm. Run from a package of scripts/package-device.sh. Each output is validated in the first
# round and deleted after every run. Writes $OUT/unopened.csv and $OUT/unopened.log.
# Usage: BEFORE=/path/to/gpusort unopened.sh [SIZE...] (default 3G 8G 16G); REPEAT (3) rounds.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
work=${WORK:-/var/tmp/gpusort-unopened}
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(3G 8G 16G)
declare -A cmd=([before]="${BEFORE:?BEFORE: an older gpusort}" [auto]="$bin/gpusort"
                [device0]="$bin/gpusort --devices 0")
echo "size,case,round,wall_s,valid" > "$out/unopened.csv"
for size in "${sizes[@]}"; do
  in=$work/in-$size.bin
  "$bin/gpusort-datagen" --format u64 --size "$size" -d uniform --seed 7 -o "$in" -q
  for round in $(seq 1 "${REPEAT:-3}"); do
    for c in before auto device0; do
      o=$work/out.bin
      start=$EPOCHREALTIME
      # shellcheck disable=SC2086
      ${cmd[$c]} --format u64 --stats --verbose "$in" "$o" > "$work/run.log" 2>&1
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      valid=-
      if [ "$round" = 1 ]; then
        valid=no
        "$bin/gpusort-validate" -q --format u64 "$in" "$o" && valid=yes
      fi
      { echo "### $size $c round $round: ${cmd[$c]}"; cat "$work/run.log"; } >> "$out/unopened.log"
      rm -f "$o"
      echo "$size,$c,$round,$wall,$valid" | tee -a "$out/unopened.csv"
    done
  done
  rm -f "$in"
done
