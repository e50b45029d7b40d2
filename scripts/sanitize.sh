#!/usr/bin/env bash
# Builds the CPU code with AddressSanitizer + UndefinedBehaviorSanitizer (the `asan` preset, in
# build-asan/) and runs the whole CPU test suite under them. Any sanitizer report fails the test
# that produced it, and then this script. Not part of scripts/test.sh: under the sanitizers the
# suite takes several times as long. Extra args go to ctest, e.g. -R 'ParallelCopy|SortFile'
# (ctest names the GoogleTest tests, not their executables).
#   JOBS=N  parallel compile and test jobs (default: nproc)
# The sanitizer options live in the asan test preset (CMakePresets.json); ASAN_OPTIONS and
# UBSAN_OPTIONS from the environment are appended and win. They are:
#   detect_leaks=1         LeakSanitizer at exit of every test process
#   halt_on_error=1        the first report ends the process: a report is a failure
#   strict_string_checks, check_initialization_order, detect_stack_use_after_return
#   print_stacktrace=1     UBSan says where (-fno-sanitize-recover=undefined makes it fatal)
# LSAN_OPTIONS names tests/sanitizer/lsan.supp: leaks inside glibc that no test can avoid.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}

cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs"

start=$(date +%s)
status=0
ctest --preset asan -j"$jobs" "$@" || status=$?
echo "sanitize: ctest under ASan+UBSan took $(( $(date +%s) - start )) s, exit status $status"
exit "$status"
