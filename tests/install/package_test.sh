#!/usr/bin/env bash
# Builds the .deb from the build (cpack -G DEB, into a temporary folder) and checks its fields
# and that it holds what a user needs, installed under /usr: the command, tools, manual,
# completion, headers, libraries, CMake package, gpusort.pc (naming /usr), license; and not
# the benchmark peers.
# Usage: package_test.sh BUILD_DIR LIBDIR VERSION; $CPACK is the cpack to run.
set -euo pipefail
build=$1 libdir=$2 version=$3
cpack=${CPACK:-cpack}
work=$(mktemp -d "${TMPDIR:-/tmp}/gpusort-package-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "package_test: FAILED: $*" >&2
  failures=$((failures + 1))
}

"$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$work" >/dev/null
deb=$(find "$work" -maxdepth 1 -name 'gpusort_*.deb')
[ -n "$deb" ] || { echo "package_test: FAILED: cpack made no gpusort_*.deb" >&2; exit 1; }
echo "package_test: $(basename "$deb"), $(stat -c %s "$deb") bytes"

[ "$(dpkg-deb -f "$deb" Package)" = gpusort ] || fail "Package is not gpusort"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version is not $version"
[ -n "$(dpkg-deb -f "$deb" Maintainer)" ] || fail "no Maintainer"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libtbb12 liburing2 libc6; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib: $depends"
done

files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in bin/gpusort bin/gpusort-datagen bin/gpusort-validate bin/gpusort-iofloor \
         share/man/man1/gpusort.1 share/bash-completion/completions/gpusort \
         include/gpusort/sort.hpp include/gpusort/version.hpp "$libdir/libgpusort_core.a" \
         "$libdir/libgpusort_base.a" "$libdir/cmake/gpusort/gpusortConfig.cmake" \
         "$libdir/cmake/gpusort/gpusortTargets.cmake" "$libdir/pkgconfig/gpusort.pc" \
         share/doc/gpusort/copyright share/doc/gpusort/LICENSE share/doc/gpusort/CHANGELOG.md; do
  grep -qx "./usr/$f" <<<"$files" || fail "/usr/$f is not in the package"
done
if grep -E 'peer|numpy_sort|cupy_sort|run_bench|bench' <<<"$files"; then
  fail "benchmark programs are in the package"
fi
pc=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/$libdir/pkgconfig/gpusort.pc")
grep -qx 'prefix=/usr' <<<"$pc" || fail "gpusort.pc does not name /usr: $pc"

((failures == 0)) || exit 1
echo "package_test: ok ($(grep -c '[^/]$' <<<"$files") files)"
