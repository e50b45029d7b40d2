#!/usr/bin/env bash
# Issue 12 on a machine of several GPUs, in one call, from a package made by
# scripts/package-device.sh (run from the package folder): what the machine is, the peer and
# host-staged bandwidth of every pair, the device-resident multi-GPU sort on 1..g GPUs, the GPU
# tests whose cases spread over every GPU, and a file sorted end to end on one GPU and on all
# of them (outputs validated and compared byte for byte). Stages run in the order of their
# worth and each is skipped when less than its estimate is left of DEADLINE seconds (default
# 600), so that a call cut short still returns what ran. Logs into $OUT (at most 8 files):
# machine.txt, p2p.csv, multi.csv, tests.log, e2e.csv, e2e.log.
# Usage: device_multi.sh [E2E_SIZE (16G)] [GPU_MEMORY (32G): one GPU needs several chunks of
# the file, each GPU's share is one chunk]
# Environment: E2E_CASES, "DEVICES BUDGET" pairs separated by "|" (default: one GPU within
# GPU_MEMORY, every GPU within it, one GPU with all its memory, then the first two again);
# E2E_FORMAT (u64): the file's record format (a --format preset such as kv64); FLOOR_REPEAT (1)
# I/O floor runs; SKIP, a list of stages left out (p2p, multi, e2e, more:
# the tests after the file, skewed: the skewed device-resident sorts);
# COMPARE=0: each output is validated and deleted at once instead of kept to compare with the
# first (for key-only records a validated output is the unique sorted order anyway), so that no
# run shares the disk with the write-back of an earlier 32 GiB output;
# FIRST="tests" runs FIRST_TESTS (default: multi_gpu_sort_test, the exchange cases of
# gpu_sort_file_test, gpu_run_formation_test; TEST=FILTER runs a gtest filter) before the
# bandwidth and the device-resident sort.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
work=${WORK:-/var/tmp/gpusort-multi}
size=${1:-16G}
gpu_memory=${2:-32G}
deadline=${DEADLINE:-600}
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpus=$(nvidia-smi -L | wc -l)
all=$(seq -s, 0 $((gpus - 1)))
say() { echo "== $(date +%T) +${SECONDS}s $*"; }
# room SECONDS: whether a stage estimated to take that long still fits.
room() { (( deadline - SECONDS >= $1 )) || { say "skipped (${1}s needed, $((deadline - SECONDS))s left): $2"; false; }; }
memory() { awk '/^MemTotal|^MemAvailable/ {printf "%s %.1f GiB  ", $1, $2 / 1048576} END {print ""}' /proc/meminfo; }

say machine
{
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv
  nvidia-smi topo -m
  echo "cpus $(nproc)"; memory
  echo "### memory: cgroup, balloon, hotplug"
  cat /proc/self/cgroup
  for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory.high; do echo "$f: $(cat $f 2>&1)"; done
  grep -E '^balloon' /proc/vmstat
  ls /sys/bus/virtio/drivers/ 2>&1 | tr '\n' ' '; echo
  ls /sys/bus/virtio/drivers/virtio_mem /sys/bus/virtio/drivers/virtio_balloon 2>&1 | tr '\n' ' '; echo
  echo "memory blocks: $(ls -d /sys/devices/system/memory/memory* 2>/dev/null | wc -l) of $(cat /sys/devices/system/memory/block_size_bytes 2>/dev/null)"
  grep -i -E 'virtio_mem|balloon' /proc/iomem 2>/dev/null | head -5
  dmesg 2>/dev/null | grep -i -E 'virtio_mem|balloon|hotplug' | head -10
  df -h "$work" | tail -1; uname -r
  "$bin/gpusort" --version
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

run_tests() {
  for t in "$@"; do
    local filter=
    [[ $t == *=* ]] && { filter=--gtest_filter=${t#*=}; t=${t%%=*}; }
    [ -x "$bin/$t" ] || continue
    room 30 "$t" || continue
    echo "### $t $filter"
    timeout 240 "$bin/$t" --gtest_color=no $filter 2>&1 |
      grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]|Failure|error' | head -40
  done >> "$out/tests.log" 2>&1
}
export GPUSORT_TEST_BINARY=$bin/gpusort
if [ "${FIRST:-}" = tests ]; then
  say "tests first: the exchange sort, in place and end to end"
  # shellcheck disable=SC2086
  run_tests ${FIRST_TESTS:-multi_gpu_sort_test gpu_sort_file_test=*Exchange* gpu_run_formation_test}
  tail -n 30 "$out/tests.log"
fi

wanted() { [[ " ${SKIP:-} " != *" $1 "* ]]; }
if wanted p2p && room 30 p2p; then
  say "p2p over GPUs $all"
  timeout 60 "$bin/gpusort-bench-p2p" --bytes 1G > "$out/p2p.csv" 2>> "$out/tests.log"
  cat "$out/p2p.csv"
fi

if wanted multi && room 45 "multi-GPU sort, 2^31 u64 keys"; then
  say "device-resident multi-GPU sort, 2^31 uniform u64 keys, 1..$gpus GPUs"
  timeout 120 "$bin/gpusort-bench-multi-gpu" --devices "$all" --keys 2G --key u64 --dist uniform \
    --repeat 5 --warmup 1 > "$out/multi.csv" 2>> "$out/tests.log"
  cat "$out/multi.csv"
fi

if [ "${FIRST:-}" != tests ]; then
  say "tests: shares over every GPU, topology, device memory"
  run_tests gpu_run_formation_test topology_test device_memory_test
  tail -n 30 "$out/tests.log"
fi

if wanted e2e && room 60 "end to end $size"; then
  format=${E2E_FORMAT:-u64}
  say "end to end: $size $format, --gpu-memory $gpu_memory, GPU 0 against GPUs $all"
  in=$work/in.bin
  echo "devices,gpu_memory,wall_s,valid,same_as_first" > "$out/e2e.csv"
  {
    "$bin/gpusort-datagen" --format "$format" --size "$size" -d uniform --seed 12 -o "$in" -q
    sync "$in"
    memory
    timeout 200 "$bin/gpusort-iofloor" --repeat "${FLOOR_REPEAT:-1}" --read uring-threads \
      --write mmap-sink "$in" "$work/floor.out" | tail -n $((1 + ${FLOOR_REPEAT:-1}))
    rm -f "$work/floor.out"
    echo "$(date +%T) floor done"
    # one GPU within --gpu-memory (several chunks), every GPU within it, then one GPU with
    # all of its memory (the one-chunk baseline where the file fits).
    IFS='|' read -r -a cases <<< "${E2E_CASES:-0 $gpu_memory|$all $gpu_memory|0 default|$all $gpu_memory|0 $gpu_memory}"
    k=0
    for c in "${cases[@]}"; do
      read -r devices budget <<< "$c"
      k=$((k + 1))
      # Every output but the first is compared with it and deleted: none replaces another,
      # whose blocks a full disk would still be freeing.
      name=$k
      room 25 "gpusort --devices $devices ($budget)" || continue
      memory
      option=(--format "$format" --devices "$devices")
      [ "$budget" = default ] || option+=(--gpu-memory "$budget")
      echo "### gpusort ${option[*]} --stats --verbose"
      start=$EPOCHREALTIME
      timeout 150 "$bin/gpusort" "${option[@]}" --stats --verbose "$in" "$work/out-$name.bin"
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      echo "wall $wall s"
      valid=no
      # Records with a payload carry their index (gpusort-datagen): equal keys must keep it.
      stable=()
      [ "$format" = kv64 ] && stable=(--stable)
      "$bin/gpusort-validate" -q --format "$format" "${stable[@]}" "$in" "$work/out-$name.bin" &&
        valid=yes
      same=-
      first=$work/out-1.bin
      if [ "${COMPARE:-1}" = 0 ]; then
        rm -f "$work/out-$name.bin"
      elif [ "$k" != 1 ] && [ -f "$first" ]; then
        same=no
        cmp -s "$first" "$work/out-$name.bin" && same=yes
        rm -f "$work/out-$name.bin"
      fi
      echo "${devices//,/+},$budget,$wall,$valid,$same" >> "$out/e2e.csv"
    done
    rm -f "$work"/out-*.bin
  } > "$out/e2e.log" 2>&1
  cat "$out/e2e.log" "$out/e2e.csv"
fi

if wanted more; then
  say "more tests"
  [ "${FIRST:-}" = tests ] || run_tests multi_gpu_sort_test
  run_tests gpu_range_sort_test
fi
if wanted skewed && room 40 "skewed multi-GPU sorts"; then
  for dist in and3 zipf equal; do
    room 15 "$dist" || break
    timeout 60 "$bin/gpusort-bench-multi-gpu" --devices "$all" --keys 2G --key u64 --dist "$dist" \
      --repeat 3 --warmup 1 --only-all 2>> "$out/tests.log" | tail -n +2 >> "$out/multi.csv"
  done
  cat "$out/multi.csv"
fi
tail -n 12 "$out/tests.log"
say done
