#!/usr/bin/env bash
# Runs on the GPU machine from a folder holding bin/ (hrs_test, run_former_test,
# gpusort-bench-hrs) and lib/ (made by tools/bench/hrs/package_hrs.sh): the HRS tests,
# compute-sanitizer memcheck and racecheck on small sizes, and the HRS/CUB benchmark. Everything
# goes to $OUT (at most 8 files come back): machine.txt, tests.log, sanitizer.log, bench.csv
# (the entropy table: 2^28 u32 and u64 keys, 2^27 u64/u64 and 2^28 u32/u32 pairs), sweep.csv
# (sizes 2^14..2^26, for the auto crossover), bench.log.
# Usage: device_hrs.sh [tests] [sanitizer] [bench] [sweep]   (default: all)
#   BENCH_ARGS adds options to both benchmark runs (e.g. --local-threshold 4608).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
stages=${*:-tests sanitizer bench sweep}
want() { [[ " $stages " == *" $1 "* ]]; }
say() { echo "== $(date +%T) $*"; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
    --format=csv; nproc; uname -r; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

if want tests; then
  say tests
  for t in hrs_test run_former_test; do
    [ -x "$bin/$t" ] || continue
    echo "### $t"
    timeout 150 "$bin/$t" --gtest_color=no 2>&1 |
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error|Expected|Which is|first diff|workspace for|Trace|u32 n=|u64 n=|  Actual' |
      head -80
    echo "exit: $?"
  done > "$out/tests.log" 2>&1
  tail -n 30 "$out/tests.log"
fi

if want sanitizer; then
  say sanitizer
  {
    echo "### compute-sanitizer memcheck: hrs_test, sizes <= 20000"
    GPUSORT_HRS_TEST_MAX_KEYS=20000 timeout 100 compute-sanitizer --tool memcheck \
      --error-exitcode 9 "$bin/hrs_test" --gtest_color=no \
      --gtest_filter='*TinySizes*:*AroundLocal*:*SmallThresholds*:*PowersOfTwo*' 2>&1 |
      grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) |Invalid|Race|========= [A-Z]' | head -30
    echo "exit: $?"
    echo "### compute-sanitizer racecheck: hrs_test, sizes <= 6000"
    GPUSORT_HRS_TEST_MAX_KEYS=6000 timeout 100 compute-sanitizer --tool racecheck \
      --error-exitcode 9 "$bin/hrs_test" --gtest_color=no \
      --gtest_filter='*TinySizes*:*SmallThresholds*' 2>&1 |
      grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |hazard|========= [A-Z]' | head -30
    echo "exit: $?"
  } > "$out/sanitizer.log" 2>&1
  tail -n 20 "$out/sanitizer.log"
fi

if want bench; then
  say bench
  timeout 200 "$bin/gpusort-bench-hrs" --types u32,u64,u64u64:27,u32u32 --log2n 28 --repeat 5 \
    --warmup 1 \
    --dists uniform,and2,and3,and4,and5,equal,zipf,sorted,reverse --profile ${BENCH_ARGS:-} \
    > "$out/bench.csv" 2> "$out/bench.log"
  echo "exit: $?" >> "$out/bench.log"
  cat "$out/bench.log"
  grep '^|' "$out/bench.csv"
fi

if want sweep; then
  say sweep
  timeout 150 "$bin/gpusort-bench-hrs" --types u32,u64,u64u64,u32u32 --log2n 14,16,18,20,22,24,26 \
    --repeat 5 \
    --warmup 1 --dists uniform,and3,equal ${BENCH_ARGS:-} > "$out/sweep.csv" 2>> "$out/bench.log"
  echo "sweep exit: $?" >> "$out/bench.log"
  grep '^|' "$out/sweep.csv"
fi
