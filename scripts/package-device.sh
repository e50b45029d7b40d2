#!/usr/bin/env bash
# Builds a relocatable gpusort (RPATH $ORIGIN/../lib) and packs the executables, GPU test
# binaries, benchmark scripts and the non-system shared libraries they need into one folder
# (default .carry/gpusort, git-ignored) that runs on a machine without liburing, TBB or Boost:
# the GPU machine, and the same folder as DEST.tar.xz: the GPU test binaries link the device
# code of both sorters (~10 MB each, 80 MB together), beyond the 64 MiB a device call carries;
# packed they take 15 MB. Carry .carry/gpusort.tar.xz and start the command with
# `tar xJf .carry/gpusort.tar.xz -C /tmp && cd /tmp/gpusort`.
# Every gpusort* tool of the build goes in, the benchmarks (gpusort-bench-hrs, -p2p, ...) too.
# TARGETS (a list of targets, e.g. "hrs_test run_former_test gpusort-bench-hrs") builds and
# packs only those, for a quicker turn on one part.
# Usage: scripts/package-device.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.carry/gpusort}
build=${BUILD_DIR:-build-device}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_RELOCATABLE=ON >/dev/null
# shellcheck disable=SC2086
ninja -C "$build" ${TARGETS:-}

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib" "$dest/bench"
if [ -n "${TARGETS:-}" ]; then
  for t in $TARGETS; do
    find "$build" -maxdepth 4 -type f -perm -u+x -name "$t" -exec cp {} "$dest/bin/" \;
  done
else
  find "$build/src/cli" "$build/tools" -maxdepth 3 -type f -perm -u+x -name 'gpusort*' \
    -exec cp {} "$dest/bin/" \;
  find "$build/tests" -maxdepth 2 -type f -perm -u+x -name '*_test' -exec cp {} "$dest/bin/" \;
fi
cp tools/bench/run_bench.py tools/peers/*.py "$dest/bench/"
cp tools/bench/merge/sweep.sh "$dest/bench/merge_sweep.sh"
cp tools/bench/auto/sweep.sh "$dest/bench/auto_sweep.sh"
cp tools/bench/auto/report.py "$dest/bench/auto_report.py"
cp tools/bench/auto/cuda_start.py "$dest/bench/auto_cuda_start.py"
cp tools/bench/device_run.sh tools/bench/gpu_safety.sh tools/bench/cgroup_run.sh \
  tools/bench/gnu_modes.sh tools/bench/hrs/device_hrs.sh tools/bench/multi_gpu/device_multi.sh \
  tools/bench/interleave.sh tools/bench/hrs/ab.sh tools/bench/hrs/e2e_check.sh \
  tools/bench/hrs/ab_report.py tools/bench/trace_io.py tools/bench/trace_tracks.py \
  "$dest/"
strip --strip-unneeded "$dest"/bin/* 2>/dev/null || true

# Every shared library the binaries load that is not part of a bare CUDA/Ubuntu image.
ldd "$dest"/bin/* 2>/dev/null | awk '/=>/ {print $3}' | sort -u |
  grep -E 'libtbb|liburing|libboost|libgtest|libhwloc' | while read -r lib; do
    cp -L "$lib" "$dest/lib/"
  done
du -sh "$dest"
tar -C "$(dirname "$dest")" -cf - "$(basename "$dest")" | xz -T0 -6 > "$dest.tar.xz"
du -sh "$dest.tar.xz"
