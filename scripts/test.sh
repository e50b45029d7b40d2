#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite:
# installs the dependencies, builds everything and runs ctest. GPU tests are skipped (and shown
# as skipped) on machines without a GPU. Then builds the libFuzzer targets with clang (the `fuzz`
# preset, in build-fuzz/) and fuzzes the command line and the .npy header parser for
# FUZZ_SECONDS each (default 30); FUZZ=0 skips that part. The ASan/UBSan run of the whole suite is scripts/sanitize.sh (too slow here).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build_dir=${BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)"

if [ "${FUZZ:-1}" != 0 ]; then
  cmake --preset fuzz -DGPUSORT_FUZZ_SECONDS="${FUZZ_SECONDS:-30}" >/dev/null
  cmake --build --preset fuzz
  ctest --preset fuzz
fi
