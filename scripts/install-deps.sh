#!/usr/bin/env bash
# Installs what gpusort needs to build and test on Debian 12 (bookworm) or a close relative.
# CUDA is optional: when nvcc is present (/usr/local/cuda/bin/nvcc) the GPU backend is built too.
# scripts/sanitize.sh needs nothing more: GCC's ASan/UBSan runtimes come with build-essential.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  liburing-dev libtbb-dev libboost-program-options-dev libgtest-dev nlohmann-json3-dev
  locales  # the JSON tests build a de_DE locale with localedef
  python3
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module and its tests
  dpkg-dev  # dpkg-shlibdeps: the .deb's dependencies (cpack -G DEB, its test)
  clang libclang-rt-dev  # the fuzz preset: clang++ and its libFuzzer/ASan/UBSan runtimes
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
