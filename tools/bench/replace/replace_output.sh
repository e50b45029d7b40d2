#!/usr/bin/env bash
# What replacing an existing output costs: each gpusort binary sorts INPUT into a new file,
# over an existing output of the same size (cached), and in place (a copy of INPUT sorted onto
# itself), REPEAT times, interleaved. CSV on stdout: the wall, --stats's own wall and its
# commit stage, so that time spent after --stats ended (at exit) shows as wall - stats_wall.
# Usage: replace_output.sh INPUT WORK_DIR REPEAT BINARY...   (extra gpusort options: GPUSORT_ARGS)
set -eu -o pipefail
input=$1 work=$2 repeat=$3
shift 3
mkdir -p "$work"
echo "binary,case,run,wall_s,stats_wall_s,commit_s"
for ((run = 1; run <= repeat; ++run)); do
  for bin in "$@"; do
    for c in new replace in-place; do
      out=$work/out.bin
      case $c in
        new) rm -f "$out" ;;
        replace) [ -f "$out" ] || "$bin" ${GPUSORT_ARGS:-} "$input" "$out" ;;
        in-place) cp "$input" "$out" ;;
      esac
      sync
      [ -f "$out" ] && cat "$out" > /dev/null
      src=$input
      [ "$c" = in-place ] && src=$out
      start=$EPOCHREALTIME
      "$bin" ${GPUSORT_ARGS:-} --stats "$src" "$out" 2> "$work/stats.txt"
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      stats_wall=$(awk '/records .* in [0-9.]+ s/ { for (i = 1; i < NF; ++i) if ($i == "in") print $(i + 1) }' "$work/stats.txt" | head -1)
      commit=$(awk '$1 == "commit" { print $2 }' "$work/stats.txt")
      echo "$(basename "$bin"),$c,$run,$wall,$stats_wall,$commit"
    done
  done
done
rm -f "$work/out.bin" "$work/stats.txt"
