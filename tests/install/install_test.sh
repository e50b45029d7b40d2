#!/usr/bin/env bash
# Installs the build into a temporary prefix and checks what a user gets there: the files in
# place, and a project outside the tree (downstream/) built against the install twice, through
# find_package(gpusort) and through pkg-config, sorting the bundled sample.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER LIBDIR; $CMAKE is the cmake to
# run, $CMAKE_GENERATOR the generator of the downstream build (ctest sets both).
set -euo pipefail
build=$1 source=$2 cxx=$3 libdir=$4
cmake=${CMAKE:-cmake}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpusort-install-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
in=$source/datasets/sample-u64-uniform.bin

step() { echo "install_test: $*"; }

step "cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null
for f in bin/gpusort include/gpusort/sort.hpp include/gpusort/version.hpp \
         "$libdir/libgpusort_core.a" "$libdir/cmake/gpusort/gpusortConfig.cmake" \
         "$libdir/cmake/gpusort/gpusortConfigVersion.cmake" "$libdir/pkgconfig/gpusort.pc" \
         share/man/man1/gpusort.1 share/bash-completion/completions/gpusort \
         share/doc/gpusort/LICENSE share/doc/gpusort/copyright; do
  [ -e "$prefix/$f" ] || { echo "install_test: FAILED: $f not installed" >&2; exit 1; }
done
if grep -rl '#include "\(core\|io\|cpu\|gpu\|pipeline\|cli\)/' "$prefix/include/gpusort"; then
  echo "install_test: FAILED: an installed header includes a private src/ header" >&2
  exit 1
fi

# The reference: the installed command's own output.
"$prefix/bin/gpusort" "$in" "$work/reference.bin"

step "find_package(gpusort) + gpusort::core"
"$cmake" -S "$source/tests/install/downstream" -B "$work/cmake-build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
"$cmake" --build "$work/cmake-build" >/dev/null
"$work/cmake-build/downstream" "$in" "$work/cmake.bin"
cmp "$work/reference.bin" "$work/cmake.bin"
"$prefix/bin/gpusort-validate" -q "$in" "$work/cmake.bin"

step "pkg-config --cflags --libs gpusort"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
version=$(sed -n 's/^#define GPUSORT_VERSION "\(.*\)"$/\1/p' "$prefix/include/gpusort/version.hpp")
[ "$(pkg-config --modversion gpusort)" = "$version" ] ||
  { echo "install_test: FAILED: gpusort.pc's version is not $version" >&2; exit 1; }
# shellcheck disable=SC2046  # the flags are words
"$cxx" -std=c++20 -O1 -o "$work/pkgconfig-downstream" "$source/tests/install/downstream/main.cpp" \
  $(pkg-config --cflags --libs gpusort)
"$work/pkgconfig-downstream" "$in" "$work/pkgconfig.bin"
cmp "$work/reference.bin" "$work/pkgconfig.bin"
step "ok"
