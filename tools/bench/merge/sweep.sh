#!/usr/bin/env bash
# Runs gpusort-bench-merge over fan-ins and record sizes (u64 keys) and collects one CSV: merge
# GB/s of output against a parallel memcpy of the same bytes, measured in the same process.
# Usage: sweep.sh BENCH_BINARY OUT.csv
#   RUNS (default "4 16 64 256"), SIZES (record bytes, default "8 16 100"), THREADS (default all),
#   REPEAT (default 5), RECORDS (default 2^28 records of 8 or 16 bytes, 2^26 of larger ones),
#   OUTPUT_FILE (merge into a shared mapping of this file, as gpusort writes its output, instead
#   of anonymous memory), NO_LOSER_TREE (set: skip the loser-tree baseline, a third of the time).
set -euo pipefail
bench=$1
out=$2
threads=${THREADS:+--threads $THREADS}
output=${OUTPUT_FILE:+--output-file $OUTPUT_FILE}
baseline=${NO_LOSER_TREE:+--no-loser-tree}
first=1
: > "$out"
for size in ${SIZES:-8 16 100}; do
  if [ -n "${RECORDS:-}" ]; then count=$RECORDS
  elif [ "$size" -le 16 ]; then count=2^28
  else count=2^26
  fi
  for runs in ${RUNS:-4 16 64 256}; do
    # shellcheck disable=SC2086
    "$bench" --csv --runs "$runs" --count "$count" --type u64 --record-size "$size" \
      --repeat "${REPEAT:-5}" $threads $output $baseline > "$out.part"
    if [ "$first" = 1 ]; then cat "$out.part" >> "$out"; first=0
    else tail -n +2 "$out.part" >> "$out"
    fi
    tail -n 1 "$out.part"
  done
done
rm -f "$out.part"
