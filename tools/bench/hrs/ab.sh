#!/usr/bin/env bash
# A/B of HRS builds in one call on the GPU machine: ROUNDS rounds, each running every benchmark
# binary of BINS (names under bin/, e.g. an older gpusort-bench-hrs copied in as bench-old) in
# turn on 2^28 device-resident keys (2^27 for u64u64:27), medians of 5 per run. Prints, per
# run, "# BIN round R" and then type, distribution, HRS ms, CUB ms, HRS/CUB and the phase
# profile; tools/bench/hrs/ab_report.py summarizes the file.
# Usage: BINS="bench-old gpusort-bench-hrs" [ROUNDS=3] [TYPES=...] [DISTS=...] ab.sh > ab.csv
set -u -o pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for r in $(seq 1 "${ROUNDS:-2}"); do
  for b in $BINS; do
    echo "# $b round $r"
    timeout 100 "bin/$b" --types "${TYPES:-u32,u64,u32u32,u64u64:27}" --log2n 28 --repeat 5 \
      --warmup 1 --dists "${DISTS:-uniform,and3,zipf,equal}" --phases 2>/dev/null |
      grep -E '^"NVIDIA' | cut -d, -f2,3,7,8,9,19
  done
done
