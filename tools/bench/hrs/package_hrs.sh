#!/usr/bin/env bash
# Builds the HRS test and benchmark binaries relocatably (RPATH $ORIGIN/../lib) and packs them
# with device_hrs.sh and the non-system shared libraries they load into one folder (default
# .carry/hrs) for the GPU machine. Usage: tools/bench/hrs/package_hrs.sh [DEST]
set -euo pipefail
cd "$(dirname "$0")/../../.."
dest=${1:-.carry/hrs}
build=${BUILD_DIR:-build-dev}
targets=${TARGETS:-hrs_test run_former_test gpusort-bench-hrs}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPUSORT_RELOCATABLE=ON >/dev/null
nice ninja -C "$build" $targets

rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib"
for t in $targets; do
  find "$build" -maxdepth 4 -type f -perm -u+x -name "$t" -exec cp {} "$dest/bin/" \;
done
cp tools/bench/hrs/device_hrs.sh "$dest/"
strip --strip-unneeded "$dest"/bin/* 2>/dev/null || true
ldd "$dest"/bin/* 2>/dev/null | awk '/=>/ {print $3}' | sort -u |
  grep -E 'libtbb|liburing|libboost|libgtest|libhwloc' | while read -r lib; do
    cp -L "$lib" "$dest/lib/"
  done
du -sh "$dest"
