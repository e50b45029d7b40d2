#!/usr/bin/env bash
# gpusort command lines compared on the same files, interleaved round by round, page cache
# warm, from a package of scripts/package-device.sh: CASES lists "name=command" entries
# separated by "|" (`gpusort` as the command's program is the package's; VAR=value words may
# come first, as with env), each run as `command --format FORMAT --stats --verbose IN OUT`.
# Each output is validated in the first round and deleted after every run, and then `sync`
# waits for any write-back still in flight (SYNC=0: not), so that no run starts beside the
# last one's. Writes $OUT/NAME.csv and $OUT/NAME.log (NAME defaults to interleave; give each
# invocation of one call its own).
# Usage: CASES="one=gpusort --devices 0|two=gpusort --devices 0,1" interleave.sh [SIZE...]
# (default 3G 8G 16G); REPEAT (3) rounds; FORMAT (u64) and DIST (uniform) of the files;
# WARMUP (0) untimed runs of the first case before the first round: a fresh host's first
# sorts ran 1.4-2.8x slower in every stage (tools/bench/results/2026-11-29-h200-spill-merge).
# WARMUP_ALL=1: each warm-up runs every case once, for cases that pay a first time of their
# own (the first page-locking of 16 GiB of runs took 4.1 s against 0.75 s after,
# tools/bench/results/2026-11-29-h200-writeback).
# FLOOR=1: the I/O floor of each file after its rounds (gpusort-iofloor, in the package), into
# $OUT/NAME-floor.txt. DIRTY=1: /proc/meminfo's Dirty and Writeback (kB) sampled every 0.25 s
# with the run each sample falls in, into $OUT/NAME-dirty.txt: where the kernel's dirty-page
# limit holds a sort back (tools/bench/results/2026-11-29-h200-spilled-ranges).
# Example (tools/bench/results/2026-11-27-h200x2-queue): an older build against this one,
# CASES="before=/tmp/gpusort-before|auto=gpusort|device0=gpusort --devices 0".
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$here/out}
work=${WORK:-/var/tmp/gpusort-interleave}
format=${FORMAT:-u64}
report=${NAME:-interleave}
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(3G 8G 16G)
IFS='|' read -r -a cases <<< "${CASES:?CASES: name=command entries separated by |}"
echo "size,case,round,wall_s,valid" > "$out/$report.csv"
sampler=
if [ "${DIRTY:-0}" = 1 ]; then
  echo "# seconds since the epoch, run (size case round, or - between runs), Dirty kB, Writeback kB" \
    > "$out/$report-dirty.txt"
  echo - > "$work/now-running"
  ( while :; do
      echo "$EPOCHREALTIME $(cat "$work/now-running" 2> /dev/null | tr ' ' _)" \
        "$(awk '/^(Dirty|Writeback):/ { printf "%s ", $2 }' /proc/meminfo)"
      sleep 0.25
    done >> "$out/$report-dirty.txt" ) &
  sampler=$!
  trap 'kill $sampler 2> /dev/null' EXIT
fi
# Sets `command` (the words of case "name=command") and `program` (the index of its first word
# that is not VAR=value, the package's gpusort where it says gpusort).
parse_case() {
  read -r -a command <<< "${1#*=}"
  program=0
  while [[ "${command[$program]}" == *=* ]]; do program=$((program + 1)); done
  [ "${command[$program]}" = gpusort ] && command[$program]=$bin/gpusort
}
# gpusort exits once its output is in place; the child that gives back the rest ends before
# the next run starts, so that no run shares the machine with it.
wait_for_child() {
  while pgrep -f "^${command[$program]} " > /dev/null; do sleep 0.05; done
}
for size in "${sizes[@]}"; do
  in=$work/in-$size.bin
  "$bin/gpusort-datagen" --format "$format" --size "$size" -d "${DIST:-uniform}" --seed 7 \
    -o "$in" -q
  sync "$in"  # its write-back would slow the first round (35 s instead of 6.4-7.0 at 32 GiB)
  warmups=("${cases[0]}")
  [ "${WARMUP_ALL:-0}" = 1 ] && warmups=("${cases[@]}")
  for ((w = 0; w < ${WARMUP:-0}; ++w)); do
    for c in "${warmups[@]}"; do
      parse_case "$c"
      env "${command[@]}" --format "$format" "$in" "$work/out.bin" > /dev/null 2>&1
      wait_for_child
      rm -f "$work/out.bin"
      [ "${SYNC:-1}" = 0 ] || sync
    done
  done
  for round in $(seq 1 "${REPEAT:-3}"); do
    for c in "${cases[@]}"; do
      name=${c%%=*}
      parse_case "$c"
      o=$work/out.bin
      [ -z "$sampler" ] || echo "$size $name $round" > "$work/now-running"
      start=$EPOCHREALTIME
      env "${command[@]}" --format "$format" --stats --verbose "$in" "$o" > "$work/run.log" 2>&1
      wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
      wait_for_child
      [ -z "$sampler" ] || echo - > "$work/now-running"
      valid=-
      if [ "$round" = 1 ]; then
        valid=no
        "$bin/gpusort-validate" -q --format "$format" "$in" "$o" && valid=yes
      fi
      { echo "### $size $name round $round: ${command[*]}"; cat "$work/run.log"; } \
        >> "$out/$report.log"
      rm -f "$o"
      # Removing the output drops its dirty pages, not the write-back already under way,
      # which would slow the next run.
      [ "${SYNC:-1}" = 0 ] || sync
      echo "$size,$name,$round,$wall,$valid" | tee -a "$out/$report.csv"
    done
  done
  if [ "${FLOOR:-0}" = 1 ]; then
    # The I/O floor of the same file, after the rounds: io_uring reads into memory, then
    # gpusort's mapped sink, end to end (tools/bench/results/2026-11-29-h200-status).
    { echo "### $size I/O floor"
      "$bin/gpusort-iofloor" --repeat 3 --read uring-threads --write mmap-sink "$in" \
        "$work/floor-out.bin" 2>&1 | tail -n 2; } >> "$out/$report-floor.txt"
    rm -f "$work/floor-out.bin"
    [ "${SYNC:-1}" = 0 ] || sync
  fi
  rm -f "$in"
done
