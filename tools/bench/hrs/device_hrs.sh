#!/usr/bin/env bash
# Runs on the GPU machine from a folder holding bin/ (hrs_test, run_former_test,
# gpusort-bench-hrs) and lib/ (made by scripts/package-device.sh, quickest with
# TARGETS="hrs_test run_former_test gpusort-bench-hrs"): the HRS tests,
# compute-sanitizer memcheck and racecheck on small sizes, and the HRS/CUB benchmark. Everything
# goes to $OUT (at most 8 files come back): machine.txt, tests.log, sanitizer.log, bench.csv
# (the entropy table: 2^28 u32 and u64 keys, 2^27 u64/u64 and 2^28 u32/u32 pairs), sweep.csv
# (sizes 2^14..2^26, for the auto crossover), bench.log.
# Usage: device_hrs.sh [tests] [sanitizer] [bench] [variants] [sweep]   (default: all but
#   variants). variants: uniform keys (VARIANT_DISTS: other distributions) of every type with
#   each option set of VARIANTS (';' between sets) into variants.csv, one '# variant' line
#   before each, in the columns of ab.sh (ab_report.py summarizes it).
#   BENCH_ARGS adds options to both benchmark runs (e.g. --local-threshold 4608); TESTS,
#   TEST_TIMEOUT, SAN_TIMEOUT, BENCH_TIMEOUT (seconds) bound the stages; GROUP_BITS_RUNS runs
#   the tests once per value of GPUSORT_HRS_TEST_GROUP_BITS (default: 0, the policy's).
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
stages=${*:-tests sanitizer bench sweep}
types=${TYPES:-u32,u64,u64u64:27,u32u32}
want() { [[ " $stages " == *" $1 "* ]]; }
say() { echo "== $(date +%T) $*"; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
    --format=csv; nproc; uname -r; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

if want tests; then
  say tests
  for t in ${TESTS:-hrs_test run_former_test}; do
    [ -x "$bin/$t" ] || continue
    for gb in ${GROUP_BITS_RUNS:-0}; do
    echo "### $t (GPUSORT_HRS_TEST_GROUP_BITS=$gb)"
    GPUSORT_HRS_TEST_GROUP_BITS=$gb timeout "${TEST_TIMEOUT:-110}" "$bin/$t" --gtest_color=no 2>&1 |
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error|Expected|Which is|first diff|workspace for|Trace|u32 n=|u64 n=|  Actual' |
      head -80
    echo "exit: $?"
    done
  done > "$out/tests.log" 2>&1
  tail -n 30 "$out/tests.log"
fi

if want sanitizer; then
  say sanitizer
  {
    echo "### compute-sanitizer memcheck: hrs_test, sizes <= 20000"
    GPUSORT_HRS_TEST_MAX_KEYS=20000 timeout "${SAN_TIMEOUT:-45}" compute-sanitizer --tool memcheck \
      --error-exitcode 9 "$bin/hrs_test" --gtest_color=no \
      --gtest_filter='*TinySizes*:*AroundLocal*:*SmallThresholds*:*PowersOfTwo*:*Joint*:*ZeroDigits*' 2>&1 |
      grep -E 'ERROR SUMMARY|^\[  (PASSED|FAILED) |Invalid|Race|========= [A-Z]' | head -30
    echo "exit: $?"
    # The pairs' small-threshold test forces the joint histogram too (48 s on an H100).
    echo "### compute-sanitizer racecheck: hrs_test, sizes <= 6000, small thresholds"
    GPUSORT_HRS_TEST_MAX_KEYS=6000 timeout "${SAN_TIMEOUT:-150}" compute-sanitizer \
      --tool racecheck --error-exitcode 9 "$bin/hrs_test" --gtest_color=no \
      --gtest_filter="${RACE_FILTER:-hrs_test/0.SmallThresholds*:hrs_pairs_test/0.SmallThresholds*}" 2>&1 |
      grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED) |hazard|========= [A-Z]' | head -30
    echo "exit: $?"
  } > "$out/sanitizer.log" 2>&1
  tail -n 20 "$out/sanitizer.log"
fi

if want bench; then
  say bench
  timeout "${BENCH_TIMEOUT:-90}" "$bin/gpusort-bench-hrs" --types "$types" --log2n 28 \
    --repeat 5 --warmup 1 --profile --phases ${BENCH_ARGS:-} \
    --dists "${DISTS:-uniform,and2,and3,and4,and5,equal,zipf,sorted,reverse}" \
    > "$out/bench.csv" 2> "$out/bench.log"
  echo "exit: $?" >> "$out/bench.log"
  cat "$out/bench.log"
  grep '^|' "$out/bench.csv"
fi

if want variants; then
  say variants
  : > "$out/variants.csv"
  IFS=';' read -ra sets <<< "${VARIANTS:-}"
  for v in "${sets[@]}"; do
    # The columns ab.sh keeps, which tools/bench/hrs/ab_report.py reads.
    echo "# variant: $v" >> "$out/variants.csv"
    timeout 60 "$bin/gpusort-bench-hrs" --types "$types" --log2n 28 --repeat 3 --warmup 1 \
      --dists "${VARIANT_DISTS:-uniform}" --phases $v 2>> "$out/bench.log" |
      grep -E '^"NVIDIA' | cut -d, -f2,3,7,8,9,19 >> "$out/variants.csv"
  done
  cat "$out/variants.csv"
fi

if want sweep; then
  say sweep
  timeout "${SWEEP_TIMEOUT:-150}" "$bin/gpusort-bench-hrs" --types "${SWEEP_TYPES:-u32,u64,u64u64,u32u32}" \
    --log2n "${SWEEP_LOG2N:-14,16,18,20,22,24,26}" --repeat 5 --warmup 1 \
    --dists "${SWEEP_DISTS:-uniform,and3,equal}" ${BENCH_ARGS:-} > "$out/sweep.csv" 2>> "$out/bench.log"
  echo "sweep exit: $?" >> "$out/bench.log"
  grep '^|' "$out/sweep.csv"
fi
