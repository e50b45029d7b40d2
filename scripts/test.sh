#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite:
# installs the dependencies, builds everything and runs ctest. GPU tests are skipped (and shown
# as skipped) on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build_dir=${BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)"
