#!/usr/bin/env bash
# How the disk under WORK_DIR takes reads and writes together: O_DIRECT dd reading a file
# alone, writing one alone, both at once, and the copy (dd alternates a 64 MiB read and a
# 64 MiB write), page cache dropped before each. A spilled merge reads runs and writes the
# output at once; this says whether that costs the disk anything against taking turns.
# Usage: [DATAGEN=path/to/gpusort-datagen] disk_mix.sh WORK_DIR [SIZE_MIB (8192)]
set -u -o pipefail
work=$1
mib=${2:-8192}
count=$(( mib / 64 ))
mkdir -p "$work"
in=$work/mix-in.bin
if [ -n "${DATAGEN:-}" ]; then  # gpusort-datagen: much quicker than /dev/urandom
  "$DATAGEN" -t u64 --size "${mib}M" -d uniform -o "$in" -q
else
  dd if=/dev/urandom of="$in" bs=64M count="$count" status=none
fi
sync
timed() {  # NAME COMMAND...: seconds of wall
  local name=$1; shift
  sync; echo 3 > /proc/sys/vm/drop_caches
  local t0=$EPOCHREALTIME
  "$@"
  local t1=$EPOCHREALTIME
  awk -v n="$name" -v a="$t0" -v b="$t1" -v m="$mib" \
    'BEGIN { printf "%s,%.2f,%.2f\n", n, b - a, m * 1.048576 / 1000 / (b - a) }'
}
echo "case,wall_s,GB_per_s_per_stream"
timed read dd if="$in" of=/dev/null bs=64M iflag=direct status=none
timed write dd if=/dev/zero of="$work/mix-w.bin" bs=64M count="$count" oflag=direct status=none
rm -f "$work/mix-w.bin"; sync
both() {
  dd if="$in" of=/dev/null bs=64M iflag=direct status=none &
  dd if=/dev/zero of="$work/mix-w.bin" bs=64M count="$count" oflag=direct status=none
  wait
}
timed read+write-at-once both
rm -f "$work/mix-w.bin"; sync
timed copy dd if="$in" of="$work/mix-w.bin" bs=64M iflag=direct oflag=direct status=none
rm -f "$work/mix-w.bin" "$in"
