#!/usr/bin/env bash
# 24 GiB, --gpu-memory 4G: base against the progressive release with prefault variants.
# Each run starts with no writeback in flight (output removed, then sync).
set -u
export LD_LIBRARY_PATH=$PWD/lib
b=$PWD/bin
w=/var/tmp/exp2; mkdir -p $w
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine2.txt
in=$w/in-24G.bin
$b/gpusort-datagen --format u64 --size 24G -d uniform --seed 7 -o $in -q; sync
echo "case,round,wall_s,valid" > $OUT/exp2.csv
run() {  # name round validate env... -- command...
  local name=$1 round=$2 val=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local s=$EPOCHREALTIME
  env "${envs[@]}" timeout 60 "$@" --format u64 --stats --verbose $in $w/out.bin > $w/run.log 2>&1
  local wall=$(awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.3f", b-a}')
  while pgrep -f "^$b/gpusort" >/dev/null; do sleep 0.05; done
  local v=-; if [ "$val" = 1 ]; then v=no; $b/gpusort-validate -q --format u64 $in $w/out.bin && v=yes; fi
  { echo "### $name round $round"; cat $w/run.log; } >> $OUT/exp2.log
  rm -f $w/out.bin; sync
  echo "$name,$round,$wall,$v" | tee -a $OUT/exp2.csv
}
for r in 1 2 3; do
  v=0; [ $r = 1 ] && v=1
  run base $r 0 X=1 -- $b/gpusort-base --gpu-memory 4G
  run release $r $v X=1 -- $b/gpusort-proto --gpu-memory 4G
  run cap7g $r $v PROTO_PREFAULT_BYTES=8053063680 -- $b/gpusort-proto --gpu-memory 4G
  run nopref $r $v PROTO_PREFAULT_BYTES=0 -- $b/gpusort-proto --gpu-memory 4G
  run ordered $r 0 PROTO_NO_RELEASE=1 -- $b/gpusort-proto --gpu-memory 4G
  run one $r 0 X=1 -- $b/gpusort-base
done
