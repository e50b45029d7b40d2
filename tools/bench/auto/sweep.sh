#!/usr/bin/env bash
# `--algorithm auto` against each fixed backend, end to end on the same files in the same run:
# for every size in AUTO_SIZES, key type in AUTO_TYPES and distribution in AUTO_DISTS, gpusort
# runs with --algorithm cpu, onesweep, hrs and auto (interleaved, AUTO_REPEAT times each; the
# page cache warm), and reports each wall time and what auto chose. Sizes listed in
# AUTO_LARGE_SIZES take only AUTO_LARGE_DISTS (their files cost disk and minutes). The first
# run of every case is checked with gpusort-validate. Every run starts alone: after the one
# before has exited (its teardown child too) and, its output deleted, `sync` has waited for the
# write-back under way (AUTO_SYNC=0: not); the input is synced once after it is generated.
# The algorithms' order changes every round (a balanced Latin square). AUTO_STATS (a file)
# collects every run's --stats=json, each after a line naming the run.
# Usage: sweep.sh BIN_DIR WORK_DIR OUT_CSV   (report: tools/bench/auto/report.py OUT_CSV; where
# the GPU runs differ: cuda_start.py OUT_CSV AUTO_STATS; plot: plot.py)
set -u -o pipefail
bin=$1
work=$2
csv=$3
sizes=${AUTO_SIZES:-1M 4M 16M 64M 256M 1G 4G}
large_sizes=${AUTO_LARGE_SIZES:-}
types=${AUTO_TYPES:-u64 u32}
dists=${AUTO_DISTS:-uniform and:3 equal zipf:1}
large_dists=${AUTO_LARGE_DISTS:-uniform and:3}
algorithms=${AUTO_ALGORITHMS:-cpu onesweep hrs auto}
repeat=${AUTO_REPEAT:-3}
sync_runs=${AUTO_SYNC:-1}
mkdir -p "$work"
echo "size,type,dist,algorithm,run,wall_s,valid,strategy,gpu_sorter" > "$csv"

one_case() {  # size type dist
  local size=$1 type=$2 dist=$3 in=$work/auto-in.bin out=$work/auto-out.bin
  "$bin/gpusort-datagen" -t "$type" --size "$size" -d "$dist" --seed 11 -o "$in" -q || return 1
  [ "$sync_runs" = 0 ] || sync "$in"
  cat "$in" > /dev/null
  local algs order base lo hi i
  read -r -a algs <<< "$algorithms"
  # A balanced Latin square (Williams): over n rounds each algorithm runs once right after each
  # other one. A GPU run right after another GPU process, or after a pause, can wait up to
  # 0.15 s longer for CUDA to start: no backend may keep one seat in the order.
  base=(0) lo=1 hi=$((${#algs[@]} - 1))
  while [ ${#base[@]} -lt ${#algs[@]} ]; do
    base+=("$lo"); lo=$((lo + 1))
    [ ${#base[@]} -lt ${#algs[@]} ] && { base+=("$hi"); hi=$((hi - 1)); }
  done
  for ((run = 1; run <= repeat; ++run)); do
    order=()
    for i in "${base[@]}"; do order+=("${algs[$(((i + run - 1) % ${#algs[@]}))]}"); done
    for a in "${order[@]}"; do
      start=$EPOCHREALTIME
      "$bin/gpusort" -t "$type" --algorithm "$a" --stats=json "$in" -o "$out" 2> "$work/auto-stats.json"
      rc=$?
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')
      while pgrep -f "^$bin/gpusort " > /dev/null; do sleep 0.02; done
      valid=-
      if [ "$rc" -ne 0 ]; then
        valid=FAILED; cat "$work/auto-stats.json" >&2
      elif [ "$run" -eq 1 ]; then
        valid=no
        "$bin/gpusort-validate" -q -t "$type" "$in" "$out" && valid=yes
      fi
      [ -z "${AUTO_STATS:-}" ] ||
        { echo "# $size $type $dist $a $run"; cat "$work/auto-stats.json"; } >> "$AUTO_STATS"
      strategy=$(grep -o '"strategy":"[^"]*"' "$work/auto-stats.json" | cut -d'"' -f4)
      sorter=$(grep -o '"gpu_sorter":"[^"]*"' "$work/auto-stats.json" | cut -d'"' -f4)
      echo "$size,$type,$dist,$a,$run,$wall,$valid,$strategy,\"$sorter\"" >> "$csv"
      rm -f "$out"
      [ "$sync_runs" = 0 ] || sync
    done
  done
  rm -f "$in"
}

for size in $sizes; do
  for type in $types; do
    for dist in $dists; do
      echo "== $(date +%T) $size $type $dist"
      one_case "$size" "$type" "$dist"
    done
  done
done
for size in $large_sizes; do
  for dist in $large_dists; do
    echo "== $(date +%T) $size u64 $dist"
    one_case "$size" u64 "$dist"
  done
done
