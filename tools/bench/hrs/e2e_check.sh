#!/usr/bin/env bash
# gpusort end to end with each GPU sorter (hrs, onesweep, auto) on 8 GiB files of one GPU chunk
# each (HRS then counts its first two rounds with the joint histogram): every output checked
# with `gpusort -c` and the outputs compared byte for byte. Runs on the GPU machine from a
# folder made by `TARGETS="gpusort gpusort-datagen" scripts/package-device.sh .carry/e2e`
# (which copies this script in); writes $OUT/stats.log (every run's --stats). Needs 24 GiB in /tmp.
# Usage: OUT=dir e2e_check.sh
set -u
cd "$(dirname "$0")" || exit 1
export LD_LIBRARY_PATH=$PWD/lib
out=${OUT:?OUT names the folder for stats.log}
nvidia-smi --query-gpu=name --format=csv,noheader
for spec in "u32 uniform" "u64 uniform" "u64 and:2" "u32 and:3" "u64 and:3" "u32 sorted"; do
  read -r t d <<< "$spec"
  bin/gpusort-datagen -q --format "$t" -d "$d" --size 8G -o /tmp/in.bin || exit 1
  for a in hrs onesweep auto; do
    echo "### $t $d --algorithm $a" >> "$out/stats.log"
    s0=$EPOCHREALTIME
    bin/gpusort --format "$t" --algorithm "$a" --stats /tmp/in.bin -o "/tmp/o_$a.bin" \
      >> "$out/stats.log" 2>&1
    echo -n "rc $? $(awk "BEGIN{print $EPOCHREALTIME - $s0}") s"
    if bin/gpusort --format "$t" -c "/tmp/o_$a.bin"; then echo " $t $d $a: sorted"
    else echo " $t $d $a: NOT SORTED"; fi
  done
  for a in hrs auto; do
    if cmp "/tmp/o_$a.bin" /tmp/o_onesweep.bin; then echo "$t $d: $a == onesweep"
    else echo "$t $d: $a DIFFERS from onesweep"; fi
  done
  rm -f /tmp/o_*.bin
done
