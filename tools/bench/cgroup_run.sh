#!/usr/bin/env bash
# Larger than RAM, honestly: each command runs inside a cgroup v2 group whose memory.max (page
# cache and page-locked memory included) is below input plus output, after the page cache was
# dropped, beside the O_DIRECT dd copy of the same file under the same limit (the floor).
# Needs root and cgroup v2 (/sys/fs/cgroup). Writes CSV lines case,run,wall_s,peak_bytes,valid.
# Usage: cgroup_run.sh BIN_DIR WORK_DIR [SIZE (16G)] [LIMIT (6G)] [REPEAT (1)] [CASES]
#   CASES (default "dd gpu gpu-spill cpu"): dd = dd bs=64M iflag=direct oflag=direct;
#   gpu = gpusort -S BUDGET; gpu-spill = gpusort -S BUDGET --gpu-memory 2G (runs must spill);
#   cpu = gpusort --devices none -S BUDGET. BUDGET (-S) is LIMIT less 2 GiB, at least 1 GiB.
#   Each command is stopped after CGROUP_TIMEOUT seconds (900; status 124, output not valid).
#   GPUSORT_ARGS adds options to every gpusort case; "%c" in them becomes the case's name
#   (e.g. GPUSORT_ARGS="--trace /tmp/trace-%c.json").
set -u -o pipefail
bin=$1
work=$2
size=${3:-16G}
limit=${4:-6G}
repeat=${5:-1}
cases=${6:-dd gpu gpu-spill cpu}
root=/sys/fs/cgroup
group=$root/gpusort-bench
to_bytes() { numfmt --from=iec "$1"; }
budget_bytes=$(( $(to_bytes "$limit") - (2 << 30) ))
(( budget_bytes < (1 << 30) )) && budget_bytes=$(( 1 << 30 ))
budget=$(( budget_bytes >> 20 ))M

[ -w "$root/cgroup.subtree_control" ] || { echo "cgroup_run: needs root and cgroup v2 at $root" >&2; exit 2; }
mkdir -p "$work"
in=$work/cg.bin
out=$work/cg.out
"$bin/gpusort-datagen" -t u64 --size "$size" -d uniform --seed 9 -o "$in" -q
sync "$in"
echo +memory > "$root/cgroup.subtree_control"

# run_limited CASE RUN COMMAND...: a fresh group (so memory.peak is this command's), an empty
# page cache, the command inside the group, the output validated outside it.
run_limited() {
  local name=$1 run=$2
  shift 2
  rmdir "$group" 2>/dev/null
  mkdir "$group" && echo "$(to_bytes "$limit")" > "$group/memory.max" || exit 2
  rm -f "$out"
  sync
  echo 3 > /proc/sys/vm/drop_caches
  local start=$EPOCHREALTIME
  # What the memory is while the command runs, twice a second: a kill for memory names no
  # culprit, these lines do (anon: our buffers; file/file_dirty/file_writeback: page cache;
  # unevictable: page-locked memory).
  (
    while [ -e "$group/memory.current" ]; do
      awk -v t="$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" \
        -v cur="$(cat "$group/memory.current" 2>/dev/null)" \
        '$1 ~ /^(anon|file|file_dirty|file_writeback|unevictable|kernel|sock)$/ { s = s " " $1 "=" int($2 / 1048576) "M" }
         END { print "t=" t "s current=" int(cur / 1048576) "M" s }' "$group/memory.stat" 2>/dev/null
      sleep 0.5
    done
  ) > "$work/cg-$name.mem" 2>/dev/null &
  local sampler=$!
  bash -c 'echo $$ > "$0/cgroup.procs" && exec timeout "${CGROUP_TIMEOUT:-900}" "$@"' "$group" "$@" \
    > "$work/cg-$name.log" 2>&1
  local status=$?
  local wall
  wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
  local peak
  peak=$(cat "$group/memory.peak" 2>/dev/null || echo 0)
  local valid=no
  if [ "$status" -eq 0 ]; then
    if [ "$name" = dd ]; then
      cmp -s "$in" "$out" && valid=copy
    else
      "$bin/gpusort-validate" -q "$in" "$out" && valid=yes
    fi
  fi
  echo "$name,$run,$wall,$peak,$valid"
  sed 's/^/    # /' "$work/cg-$name.log" | tail -n 25 >&2
  # The memory samples: the largest current, and the last few before the end.
  echo "    # memory sample with the largest current, then the last ones:" >&2
  awk '{ split($2, a, "="); v = a[2] + 0; if (v >= m) { m = v; line = $0 } } END { print line }' \
    "$work/cg-$name.mem" 2>/dev/null | sed 's/^/    #   /' >&2
  tail -n 3 "$work/cg-$name.mem" | sed 's/^/    #   /' >&2
  rm -f "$out"
  # gpusort exits once its output is in place; the child that gives back the rest is still
  # in the group for a moment, and a group with a process in it cannot be removed.
  while [ -s "$group/cgroup.procs" ]; do sleep 0.05; done
  rmdir "$group" 2>/dev/null
  wait "$sampler" 2>/dev/null
}

extra() { local a=${GPUSORT_ARGS:-}; echo "${a//%c/$1}"; }

echo "case,run,wall_s,peak_bytes,valid"
echo "# $size u64, memory.max $limit, -S $budget, page cache dropped before each run" >&2
for ((run = 1; run <= repeat; ++run)); do
  for c in $cases; do
    case $c in
      dd) run_limited dd "$run" dd if="$in" of="$out" bs=64M iflag=direct oflag=direct ;;
      gpu) run_limited gpu "$run" "$bin/gpusort" -S "$budget" -T "$work" --stats --verbose \
             $(extra gpu) "$in" "$out" ;;
      gpu-spill) run_limited gpu-spill "$run" "$bin/gpusort" -S "$budget" --gpu-memory 2G -T "$work" \
                   --stats --verbose $(extra gpu-spill) "$in" "$out" ;;
      cpu) run_limited cpu "$run" "$bin/gpusort" --devices none -S "$budget" -T "$work" --stats \
             --verbose $(extra cpu) "$in" "$out" ;;
      *) echo "cgroup_run: unknown case $c" >&2 ;;
    esac
  done
done
rm -f "$in"
