#!/usr/bin/env bash
# What a spilled CPU sort spends after its merge: each gpusort binary sorts INPUT with
# `--devices none -S BUDGET -T SPILL_DIR`, REPEAT times, interleaved. CSV on stdout: the wall,
# where the merge ended, the busy time of "release runs" and --stats's own wall.
# Usage: spill_tail.sh INPUT WORK_DIR BUDGET REPEAT BINARY...
set -eu -o pipefail
input=$1 work=$2 budget=$3 repeat=$4
shift 4
mkdir -p "$work/spill"
echo "binary,run,wall_s,merge_end_s,release_runs_busy_s,stats_wall_s"
for ((run = 1; run <= repeat; ++run)); do
  for bin in "$@"; do
    rm -f "$work/out.bin"
    sync
    start=$EPOCHREALTIME
    "$bin" --devices none -S "$budget" -T "$work/spill" --stats "$input" "$work/out.bin" \
      2> "$work/stats.txt"
    wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    merge_end=$(awk '$1 == "merge" { print $NF }' "$work/stats.txt")
    release=$(awk '$1 == "release" && $2 == "runs" { print $3 }' "$work/stats.txt")
    stats_wall=$(grep -o ' in [0-9.]* s' "$work/stats.txt" | head -1 | awk '{ print $2 }')
    echo "$(basename "$bin"),$run,$wall,$merge_end,$release,$stats_wall"
  done
done
rm -f "$work/out.bin" "$work/stats.txt"
