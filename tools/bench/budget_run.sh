#!/usr/bin/env bash
# Sorts with -S smaller than the input, page cache warm (no cgroup): the I/O floor, then the
# CPU path with -S BUDGET_S (runs spill), the GPU path with --gpu-memory BUDGET_GPU and -S
# BUDGET_S (GPU runs spill), and the default GPU path, BUDGET_REPEAT (1) times each, every
# output validated. Walls into $OUT/budget.csv, the --stats of every sort into $OUT/budget.log.
# BUDGET_BINARIES (default gpusort): programs of the package's bin/ to run each case with, in
# turn (an A/B of two builds in the same run); CASES (default "cpu gpu-spill gpu"); BUDGET_TEMP
# (default the work folder): the -T directory of the spilled runs, e.g. /dev/shm to leave the
# disk out.
# Usage: budget_run.sh PACKAGE_DIR   (a folder made by scripts/package-device.sh)
set -u -o pipefail
pkg=$1
bin=$pkg/bin
out=${OUT:-$pkg/out}
work=${WORK:-/tmp/gpusort-work}
size=${BUDGET_SIZES:-16G}
budget=${BUDGET_S:-4G}
gpu_memory=${BUDGET_GPU:-2G}
temp=${BUDGET_TEMP:-$work}
export LD_LIBRARY_PATH=$pkg/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out" "$work"
echo "size,case,binary,run,wall_s,valid" > "$out/budget.csv"
for s in $size; do
  in=$work/budget-in.bin
  "$bin/gpusort-datagen" -t u64 --size "$s" -d uniform --seed 9 -o "$in" -q
  cat "$in" > /dev/null
  echo "### $s I/O floor" >> "$out/budget.log"
  "$bin/gpusort-iofloor" --repeat 2 --read uring-threads,uring-async --write mmap-sink \
    "$in" "$work/budget-out.bin" 2>&1 | tail -n 2 >> "$out/budget.log"
  rm -f "$work/budget-out.bin"
  for ((run = 1; run <= ${BUDGET_REPEAT:-1}; ++run)); do
    for c in ${CASES:-cpu gpu-spill gpu}; do
      case $c in
        cpu) option=(--devices none -S "$budget") ;;
        gpu-spill) option=(--gpu-memory "$gpu_memory" -S "$budget") ;;
        *) option=() ;;
      esac
      for b in ${BUDGET_BINARIES:-gpusort}; do
        echo "### $s $c: $b ${option[*]} --stats --verbose" >> "$out/budget.log"
        start=$EPOCHREALTIME
        "$bin/$b" "${option[@]}" -T "$temp" --stats --verbose "$in" -o "$work/budget-out.bin" \
          >> "$out/budget.log" 2>&1
        wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
        valid=no
        "$bin/gpusort-validate" -q "$in" "$work/budget-out.bin" && valid=yes
        echo "$s,$c,$b,$run,$wall,$valid" | tee -a "$out/budget.csv"
        rm -f "$work/budget-out.bin"
      done
    done
  done
  rm -f "$in"
done
