#!/usr/bin/env bash
# GNU sort modes on the GPU machine: -u, -c and -m through the GPU strategies (checked against
# the CPU backend), then `-m` of MERGE_FILES sorted files of MERGE_FILE_SIZE each against two
# floors of the same bytes measured in the same run: `cat` of the files into one file, and
# gpusort-iofloor of that concatenation. Medians of MERGE_REPEAT runs; page cache warm.
# Usage: gnu_modes.sh BIN_DIR WORK_DIR OUT_CSV
#   MERGE_FILES (default 16), MERGE_FILE_SIZE (default 1G), MERGE_REPEAT (default 3),
#   DUP_SIZE (default 4G: the input of the -u checks)
set -u -o pipefail
bin=$1
work=$2
csv=$3
files=${MERGE_FILES:-16}
file_size=${MERGE_FILE_SIZE:-1G}
repeat=${MERGE_REPEAT:-3}
mkdir -p "$work"
say() { echo "== $(date +%T) $*"; }
now() { date +%s.%N; }
check() {  # name, then a command that must succeed
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fi
}

say "-u, -c on the GPU strategies (${DUP_SIZE:-4G} of u64, 2^20 distinct keys)"
"$bin/gpusort-datagen" --size "${DUP_SIZE:-4G}" -d few:1048576 --seed 3 -o "$work/dup.bin" -q
"$bin/gpusort" --devices none -u "$work/dup.bin" "$work/u-cpu.bin"
for case in "one-chunk:" "ranges:--gpu-memory 1G --merge-on gpu" "host:--gpu-memory 1G --merge-on host"; do
  name=${case%%:*}
  opts=${case#*:}
  # shellcheck disable=SC2086
  "$bin/gpusort" -u $opts --stats "$work/dup.bin" "$work/u-gpu.bin" 2>&1 | head -2
  check "-u $name file" cmp -s "$work/u-cpu.bin" "$work/u-gpu.bin"
  # shellcheck disable=SC2086
  "$bin/gpusort" -u $opts "$work/dup.bin" - | cat > "$work/u-pipe.bin"
  check "-u $name pipe" cmp -s "$work/u-cpu.bin" "$work/u-pipe.bin"
done
check "-c -u sorted unique" "$bin/gpusort" -c -u "$work/u-cpu.bin"
"$bin/gpusort" -c "$work/dup.bin"
check "-c unsorted exits 1" test $? -eq 1
rm -f "$work"/dup.bin "$work"/u-*.bin

say "-m of $files sorted files of $file_size"
inputs=()
for i in $(seq 1 "$files"); do
  "$bin/gpusort-datagen" --size "$file_size" --seed "$i" -o "$work/raw.bin" -q
  "$bin/gpusort" "$work/raw.bin" "$work/sorted-$i.bin"
  inputs+=("$work/sorted-$i.bin")
done
rm -f "$work/raw.bin"
cat "${inputs[@]}" > /dev/null
echo "case,run,seconds" > "$csv"
for r in $(seq 1 "$repeat"); do
  rm -f "$work/cat.bin"
  sync
  t0=$(now)
  cat "${inputs[@]}" > "$work/cat.bin"
  t1=$(now)
  echo "cat,$r,$(awk "BEGIN {print $t1 - $t0}")" >> "$csv"
done
"$bin/gpusort-iofloor" --repeat "$repeat" --write uring-sink,mmap-sink --json "$work/cat.bin" \
  "$work/floor.bin" > "$work/iofloor.json"
python3 - "$work/iofloor.json" >> "$csv" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for i, t in enumerate(d["floor"]["runs_s"], 1):
    print(f"iofloor,{i},{t}")
PY
rm -f "$work/floor.bin" "$work/cat.bin"
for r in $(seq 1 "$repeat"); do
  rm -f "$work/merged.bin"
  sync
  t0=$(now)
  "$bin/gpusort" -m --stats "${inputs[@]}" -o "$work/merged.bin" 2> "$work/merge-stats.txt"
  t1=$(now)
  echo "gpusort-m,$r,$(awk "BEGIN {print $t1 - $t0}")" >> "$csv"
done
cat "$work/merge-stats.txt"
check "-m output sorted" "$bin/gpusort" -C "$work/merged.bin"
check "-m output size" test "$(stat -c %s "$work/merged.bin")" -eq "$(cat "${inputs[@]}" | wc -c)"
# -u of the merge: every key is a uniform random u64, so nothing is dropped, only read.
t0=$(now)
"$bin/gpusort" -m -u "${inputs[@]}" -o "$work/merged-u.bin"
t1=$(now)
echo "gpusort-m-u,1,$(awk "BEGIN {print $t1 - $t0}")" >> "$csv"
check "-m -u output" cmp -s "$work/merged.bin" "$work/merged-u.bin"
rm -f "$work"/merged*.bin "$work"/sorted-*.bin
cat "$csv"
