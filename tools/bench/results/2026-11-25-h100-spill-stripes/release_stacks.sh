#!/usr/bin/env bash
# diagnostic: where the release tail waits
set -u
pkg=/tmp/gpusort; bin=$pkg/bin; export LD_LIBRARY_PATH=$pkg/lib
work=/tmp/gpusort-work; mkdir -p $work
in=$work/in.bin
$bin/gpusort-datagen -t u64 --size 16G -d uniform --seed 9 -o $in -q
cat $in > /dev/null
sync
for mode in disk; do
  $bin/gpusort --devices none -S 4G -T $work --stats $in -o $work/out.bin > $OUT/diag-$mode.log 2>&1 &
  pid=$!
  t0=$EPOCHREALTIME
  while kill -0 $pid 2>/dev/null; do
    t=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
    echo "t=$t $(grep -E '^(Dirty|Writeback):' /proc/meminfo | tr -s ' ' | tr '\n' ' ')" >> $OUT/diag-$mode.log
    for task in /proc/$pid/task/*; do
      st=$(awk '{print $3}' $task/stat 2>/dev/null)
      if [ "$st" = "D" ]; then
        echo "  D $(cat $task/comm 2>/dev/null): $(head -12 $task/stack 2>/dev/null | awk '{print $2}' | tr '\n' ' ')" >> $OUT/diag-$mode.log
      fi
    done
    sleep 0.3
  done
  wait $pid
  rm -f $work/out.bin
done
