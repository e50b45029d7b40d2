#!/usr/bin/env bash
# Runs on the GPU machine from a package made by scripts/package-device.sh: GPU tests,
# compute-sanitizer, the chunked-sort benchmark, and the end-to-end harness. Logs go to $OUT
# (at most 8 files come back: keep it that way).
# Usage: device_run.sh [tests] [sanitizer] [chunked] [e2e] [stats]   (default: all)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
work=${WORK:-/tmp/gpusort-work}
size=${E2E_SIZE:-8G}
repeat=${E2E_REPEAT:-3}
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
stages=${*:-tests sanitizer chunked e2e stats}
want() { [[ " $stages " == *" $1 "* ]]; }
say() { echo "== $(date +%T) $*"; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
    --format=csv; nproc; free -g; df -h /tmp | tail -1; uname -r; } > "$out/machine.txt" 2>&1

if want tests; then
  say tests
  for t in ${TESTS:-record_bits_test run_former_test gpu_sort_file_test pipeline_test radix_sort_test \
           multiway_merge_test io_test}; do
    [ -x "$bin/$t" ] || continue
    echo "### $t"
    timeout 300 "$bin/$t" --gtest_color=no 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error' | head -40
  done > "$out/tests.log" 2>&1
  tail -n 40 "$out/tests.log"
fi

if want sanitizer; then
  say sanitizer
  "$bin/gpusort-datagen" -t f64 --record-size 16 --key-offset 8 --count 1M -d uniform --seed 7 \
    -o "$work/san.bin" >/dev/null
  for tool in memcheck racecheck; do
    echo "### compute-sanitizer --tool $tool: gpusort, 16-byte records, 4+ chunks"
    timeout 240 compute-sanitizer --tool "$tool" --leak-check full --error-exitcode 9 \
      "$bin/gpusort" -t f64 --record-size 16 --key-offset 8 --gpu-memory 16M --stats \
      "$work/san.bin" "$work/san.out" 2>&1 | tail -n 12
    echo "exit: $?"
    "$bin/gpusort-validate" -t f64 --record-size 16 --key-offset 8 "$work/san.bin" "$work/san.out"
  done >> "$out/tests.log" 2>&1
  tail -n 30 "$out/tests.log"
fi

if want chunked; then
  say chunked
  timeout 300 "$bin/gpusort-bench-chunked" --bytes 16G --budget 4G --chunks auto,1,2,4,8,16 \
    --repeat 3 > "$out/chunked.log" 2>&1
  tail -n 20 "$out/chunked.log"
fi

if want e2e; then
  say "e2e harness $size"
  timeout 560 python3 "$here/bench/run_bench.py" --sizes "$size" --distributions uniform \
    --repeat "$repeat" --bin-dir "$bin" --work-dir "$work/e2e" --results "$out" \
    --contenders "${E2E_CONTENDERS:-iofloor,cp,gpusort-gpu,gpusort-cpu,cubsort,cupy,tbbsort}" \
    --keep-inputs > "$out/e2e.log" 2>&1
  tail -n 25 "$out/e2e.log"
fi

if want stats; then
  say "stats and trace"
  in=$(ls "$work"/e2e/*.bin 2>/dev/null | head -1)
  if [ -z "$in" ]; then
    in=$work/stats.bin
    "$bin/gpusort-datagen" -t u64 --size "$size" -d uniform --seed 1 -o "$in" >/dev/null
  fi
  cat "$in" > /dev/null
  for mode in "" "--devices none"; do
    echo "### gpusort $mode --stats $in"
    "$bin/gpusort" $mode --stats --verbose --trace "$work/trace.json" "$in" "$work/stats.out" 2>&1
    rm -f "$work/stats.out"
    [ -z "$mode" ] && gzip -c "$work/trace.json" > "$out/trace-gpu.json.gz"
  done > "$out/stats.txt" 2>&1
  cat "$out/stats.txt"
fi
say done
