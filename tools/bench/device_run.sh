#!/usr/bin/env bash
# Runs on the GPU machine from a package made by scripts/package-device.sh: GPU tests,
# compute-sanitizer, the chunked-sort benchmark, and the end-to-end harness. Logs go to $OUT,
# at most 8 files (all that come back): tests.log (machine, tests, sanitizer), chunked.log,
# the harness's results.{csv,md,png} and iofloor-*.json, stats.txt (stats and multichunk) and
# trace-gpu.json.gz; the harness's console log stays in $WORK.
# Usage: device_run.sh [tests] [sanitizer] [chunked] [merge] [e2e] [stats] [multichunk] [cgroup] [gnu]
#                      [stdin] [auto] [p2p]   (default: all but cgroup, gnu, stdin, auto and p2p)
#   auto: tools/bench/auto/sweep.sh (--algorithm auto against cpu, onesweep and hrs on the same
#   files; AUTO_* variables as documented there) into auto.csv, and its report into auto.md.
#   p2p: gpusort-bench-p2p over every GPU (P2P_BYTES per copy, default 1G) into p2p.csv: peer and
#   host-staged copy bandwidth of each ordered pair, or within the GPU and D2H/H2D on one.
#   stdin: STDIN_SIZE (default 8G) of u64 in the page cache sorted STDIN_REPEAT (3) times from
#   the file, from `cat file |` and from `gpusort-bench-pipe-source file |` (a producer as fast
#   as the page cache), into stdin.csv; each run's stats (the read stage's rate) in stdin.log.
#   gnu: tools/bench/gnu_modes.sh: -u/-c on the GPU strategies, and -m of 16 sorted 1 GiB
#   files against cat and the I/O floor of the same bytes, into gnu.csv and gnu.log.
#   merge: tools/bench/merge/sweep.sh into merge.csv (and merge-baseline.csv when the package
#   holds bin/gpusort-bench-merge-baseline, a build of another commit to compare against);
#   with MERGE_INTO_FILE=1 also merge-file.csv, the same merges into a file mapping.
#   multichunk: inputs of each MULTI_SIZE (a list; default 24G) sorted MULTI_REPEAT times
#   (default 2) in each of MULTI_CASES (default "ranges host one-chunk"): --gpu-memory
#   MULTI_GPU_MEMORY (default 8G) with the runs sorted again by key range on the GPU (ranges)
#   or merged on the host (host) or as the planner chooses (auto), and the default GPU memory
#   (one-chunk), after the I/O floor;
#   walls into multichunk.csv (input and output must fit the 64 GiB disk of the GPU machine).
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
stages=${*:-tests sanitizer chunked merge e2e stats multichunk}
want() { [[ " $stages " == *" $1 "* ]]; }
say() { echo "== $(date +%T) $*"; }

# The machine heads tests.log once: a second call in the same $OUT (another stage) keeps the
# first one's test results.
[ -s "$out/tests.log" ] ||
  { nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
      --format=csv; nproc; free -g; df -h /tmp | tail -1; uname -r; } > "$out/tests.log" 2>&1

if want tests; then
  say tests
  # The end-to-end tests (cli_test, safety_test) run the package's gpusort: the build tree's
  # path they were compiled with does not exist here.
  export GPUSORT_TEST_BINARY=$bin/gpusort
  for t in ${TESTS:-record_bits_test run_former_test hrs_test hrs_round_estimate_test gpu_sort_file_test gpu_range_sort_test \
           gpu_run_formation_test pipeline_test radix_sort_test multiway_merge_test merge_vector_test key_order_test io_test \
           device_memory_test topology_test partition_plan_test multi_gpu_sort_test cli_test safety_test}; do
    [ -x "$bin/$t" ] || continue
    echo "### $t"
    timeout 300 "$bin/$t" --gtest_color=no 2>&1 | grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error' | head -40
  done >> "$out/tests.log" 2>&1
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

if want p2p; then
  say p2p
  timeout 300 "$bin/gpusort-bench-p2p" --bytes "${P2P_BYTES:-1G}" > "$out/p2p.csv" 2>> "$out/tests.log"
  cat "$out/p2p.csv"
fi

if want chunked; then
  say chunked
  timeout 300 "$bin/gpusort-bench-chunked" --bytes 16G --budget 4G --chunks auto,1,2,4,8,16 \
    --repeat 3 > "$out/chunked.log" 2>&1
  tail -n 20 "$out/chunked.log"
fi

if want merge; then
  say "merge sweep"
  for variant in "" -baseline; do
    [ -x "$bin/gpusort-bench-merge$variant" ] || continue
    echo "### gpusort-bench-merge$variant"
    timeout 500 "$here/bench/merge_sweep.sh" "$bin/gpusort-bench-merge$variant" \
      "$out/merge$variant.csv" 2>&1
    # The same merges into a file mapping in the work folder, as gpusort writes its output.
    [ -n "${MERGE_INTO_FILE:-}" ] && OUTPUT_FILE=$work/merge-out.bin timeout 500 \
      "$here/bench/merge_sweep.sh" "$bin/gpusort-bench-merge$variant" \
      "$out/merge$variant-file.csv" 2>&1
  done
fi

if want e2e; then
  say "e2e harness $size"
  timeout 560 python3 "$here/bench/run_bench.py" --sizes "$size" --distributions uniform \
    --repeat "$repeat" --bin-dir "$bin" --work-dir "$work/e2e" --results "$out" \
    --contenders "${E2E_CONTENDERS:-iofloor,cp,gpusort-gpu,gpusort-cpu,cubsort,cupy,tbbsort}" \
    --keep-inputs > "$work/e2e.log" 2>&1
  tail -n 25 "$work/e2e.log"
fi

if want stats; then
  say "stats and trace"
  in=$(ls "$work"/e2e/*.bin 2>/dev/null | head -1)
  if [ -z "$in" ]; then
    in=$work/stats.bin
    "$bin/gpusort-datagen" -t u64 --size "$size" -d uniform --seed 1 -o "$in" >/dev/null
  fi
  sync "$in"; cat "$in" > /dev/null
  for mode in "" "--devices none"; do
    echo "### gpusort $mode --stats $in"
    "$bin/gpusort" $mode --stats --verbose --trace "$work/trace.json" "$in" "$work/stats.out" 2>&1
    rm -f "$work/stats.out"
    [ -z "$mode" ] && gzip -c "$work/trace.json" > "$out/trace-gpu.json.gz"
  done >> "$out/stats.txt" 2>&1
  cat "$out/stats.txt"
fi
if want multichunk; then
  msizes=${MULTI_SIZE:-24G}
  mgpu=${MULTI_GPU_MEMORY:-8G}
  cases=${MULTI_CASES:-ranges host one-chunk}
  say "multichunk $msizes, --gpu-memory $mgpu: $cases"
  rm -rf "$work/e2e"  # room in the page cache for this input, its runs and its output
  in=$work/multi.bin
  echo "size,case,run,wall_s,valid" > "$out/multichunk.csv"
  for msize in $msizes; do
    {
      "$bin/gpusort-datagen" -t u64 --size "$msize" -d uniform --seed 3 -o "$in"
      # Written back before anything is timed: an input still dirty in the page cache counts
      # against the dirty limit and throttled the first 24 GiB sorts to a third of their speed.
      sync "$in"
      cat "$in" > /dev/null
      "$bin/gpusort-iofloor" --repeat 2 --read uring-threads,uring-async --write mmap-sink \
        "$in" "$work/multi.out" | tail -n 2
      rm -f "$work/multi.out"
      # ranges: --gpu-memory forces several runs, sorted again by key range on the GPU; host:
      # the same runs merged on the host; one-chunk: the default GPU memory, where the input
      # is one chunk (the baseline). Interleaved, so that drift hits every case alike.
      for ((run = 1; run <= ${MULTI_REPEAT:-2}; ++run)); do
        for c in $cases; do
          case $c in
            ranges) option=(--gpu-memory "$mgpu" --merge-on gpu) ;;
            host) option=(--gpu-memory "$mgpu" --merge-on host) ;;
            auto) option=(--gpu-memory "$mgpu") ;;
            *) option=() ;;
          esac
          echo "### $msize $c: gpusort ${option[*]} --stats --verbose"
          start=$EPOCHREALTIME
          "$bin/gpusort" "${option[@]}" --stats --verbose "$in" "$work/multi.out"
          wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
          echo "wall $wall s"
          valid=no
          "$bin/gpusort-validate" "$in" "$work/multi.out" && valid=yes
          echo "$msize,$c,$run,$wall,$valid" >> "$out/multichunk.csv"
          rm -f "$work/multi.out"
        done
      done
    } > "$work/multichunk.txt" 2>&1
    tee -a "$out/stats.txt" < "$work/multichunk.txt"
    rm -f "$in"
  done
fi

if want auto; then
  say "auto against each backend"
  bash "$here/bench/auto_sweep.sh" "$bin" "$work/auto" "$out/auto.csv" > "$work/auto.log" 2>&1
  tail -n 5 "$work/auto.log"
  python3 "$here/bench/auto_report.py" "$out/auto.csv" > "$out/auto.md"
  cat "$out/auto.md"
fi

if want cgroup; then
  # cgroup_run.sh: CGROUP_SIZE (16G) under memory.max CGROUP_LIMIT (6G), cold cache, into
  # cgroup.csv (the commands' stats in cgroup.log).
  say "cgroup ${CGROUP_SIZE:-16G} under ${CGROUP_LIMIT:-6G}: ${CGROUP_CASES:-dd gpu gpu-spill cpu}"
  rm -rf "$work/e2e" "$work/multi.bin"
  bash "$here/cgroup_run.sh" "$bin" "$work/cgroup" "${CGROUP_SIZE:-16G}" "${CGROUP_LIMIT:-6G}" \
    "${CGROUP_REPEAT:-1}" "${CGROUP_CASES:-dd gpu gpu-spill cpu}" > "$out/cgroup.csv" 2> "$out/cgroup.log"
  cat "$out/cgroup.csv"
fi
say done

if want stdin; then
  ssize=${STDIN_SIZE:-8G}
  say "stdin $ssize: file against cat | gpusort - and pipe-source | gpusort -"
  in=$work/stdin.bin
  "$bin/gpusort-datagen" -t u64 --size "$ssize" -d uniform --seed 5 -o "$in" -q
  sync "$in"; cat "$in" > /dev/null
  echo "case,run,wall_s,valid" > "$out/stdin.csv"
  for ((run = 1; run <= ${STDIN_REPEAT:-3}; ++run)); do
    for c in file cat splice; do
      echo "### $c run $run"
      start=$EPOCHREALTIME
      case $c in
        file) "$bin/gpusort" --stats "$in" "$work/stdin.out" ;;
        cat) cat "$in" | "$bin/gpusort" --stats - "$work/stdin.out" ;;
        splice) "$bin/gpusort-bench-pipe-source" "$in" | "$bin/gpusort" --stats - "$work/stdin.out" ;;
      esac
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      valid=no
      "$bin/gpusort-validate" -q "$in" "$work/stdin.out" && valid=yes
      echo "$c,$run,$wall,$valid" >> "$out/stdin.csv"
      rm -f "$work/stdin.out"
    done
  done > "$out/stdin.log" 2>&1
  rm -f "$in"
  cat "$out/stdin.csv"
fi

if want gnu; then
  say gnu
  bash "$here/gnu_modes.sh" "$bin" "$work/gnu" "$out/gnu.csv" > "$out/gnu.log" 2>&1
  tail -n 40 "$out/gnu.log"
fi
