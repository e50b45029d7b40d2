#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a sorted file: installs the dependencies,
# builds gpusort, sorts the bundled sample and checks the result.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
build_dir=${BUILD_DIR:-build}
in=datasets/sample-u64-uniform.bin
out=$(mktemp --suffix=.bin)
trap 'rm -f "$out"' EXIT
echo
echo "quickstart: sorting $in ($(stat -c %s "$in") bytes of little-endian u64 keys)"
echo "+ $build_dir/src/cli/gpusort --stats --verbose $in $out"
"$build_dir/src/cli/gpusort" --stats --verbose "$in" "$out"
echo "+ $build_dir/tools/validate/gpusort-validate $in $out"
"$build_dir/tools/validate/gpusort-validate" "$in" "$out"
echo "quickstart: first keys of the sorted output:"
od -An -t u8 -N 32 -w8 "$out" | sed 's/^ */  /'
echo "quickstart: done"
