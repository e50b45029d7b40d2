#!/usr/bin/env bash
# 24 GiB, --gpu-memory 4G: base against the progressive release with prefault variants.
# Each run starts with no writeback in flight (output removed, then sync).
set -u
export LD_LIBRARY_PATH=$PWD/lib
b=$PWD/bin
w=/var/tmp/exp4; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine2.txt
echo "case,round,wall_s,valid" > $OUT/exp4.csv
run() {  # name round validate env... -- command...
  local name=$1 round=$2 val=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local s=$EPOCHREALTIME
  env "${envs[@]}" timeout 60 "$@" --format u64 --stats --verbose $in $w/out.bin > $w/run.log 2>&1
  local wall=$(awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}')
  while pgrep -f "^$b/gpusort" >/dev/null; do sleep 0.05; done
  local v=-; if [ "$val" = 1 ]; then v=no; $b/gpusort-validate -q --format u64 $in $w/out.bin && v=yes; fi
  { echo "### $name round $round"; cat $w/run.log; } >> $OUT/exp4.log
  rm -f $w/out.bin; sync
  echo "$name,$round,$wall,$v" | tee -a $OUT/exp4.csv
}
{
  ./bin/gpu_run_formation_test 2>&1 | tail -3
  timeout 150 ./bin/gpu_sort_file_test --gtest_filter='*Stream*:*Pipe*:*Spilled*' 2>&1 | tail -3
} > $OUT/tests4.log 2>&1
for size in 24G 16G 8G; do
  in=$w/in-$size.bin
  $b/gpusort-datagen --format u64 --size $size -d uniform --seed 7 -o $in -q; sync
  n=5; [ $size = 16G ] && n=4; [ $size = 8G ] && n=3
  for r in $(seq 1 $n); do
    v=0; [ $r = 1 ] && v=1
    run base-$size $r 0 X=1 -- $b/gpusort-base
    run ahead-$size $r $v X=1 -- $b/gpusort
    [ $size = 24G ] && [ $r -le 2 ] && run runs4g-$size $r $v X=1 -- $b/gpusort --gpu-memory 4G
  done
  rm -f $in
done
