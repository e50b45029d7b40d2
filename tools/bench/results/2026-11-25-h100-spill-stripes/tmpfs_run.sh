#!/usr/bin/env bash
# The spilled cases with the temporary files in /dev/shm (no disk, no writeback, no discards).
set -u
pkg=/tmp/gpusort; bin=$pkg/bin; export LD_LIBRARY_PATH=$pkg/lib
work=/tmp/gpusort-work; mkdir -p $work
in=$work/in.bin
[ -f $in ] || $bin/gpusort-datagen -t u64 --size 16G -d uniform --seed 9 -o $in -q
cat $in > /dev/null
for opt in "--devices none -S 4G" "--gpu-memory 2G -S 4G"; do
  echo "### -T /dev/shm $opt" >> $OUT/shm.log
  # shellcheck disable=SC2086
  $bin/gpusort $opt -T /dev/shm --stats $in -o $work/out.bin >> $OUT/shm.log 2>&1
  $bin/gpusort-validate -q $in $work/out.bin && echo valid >> $OUT/shm.log
  rm -f $work/out.bin
done
rm -f $in
