# `cpack -G DEB` in a build folder: gpusort_<version>_<arch>.deb, holding what `cmake --install`
# puts in place (the command, the tools, manual, completion, headers, libraries, CMake and
# pkg-config files, the Python module when built, the license) under /usr.
set(CPACK_PACKAGE_NAME gpusort)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The gpusort authors")
set(GPUSORT_PACKAGE_MAINTAINER "gpusort maintainers <maintainers@users.noreply.a-seed-4e060416.example>"
    CACHE STRING "Maintainer field of the package (Name <email>)")
set(CPACK_PACKAGE_CONTACT "${GPUSORT_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "sort binary files of fixed-size records, on the GPU when there is one")
set(CPACK_PACKAGE_DESCRIPTION
    "gpusort sorts files of fixed-size binary records by a key field (integers, IEEE floats in \
totalOrder, byte strings), far larger than GPU memory and larger than host memory: runs are \
sorted on the GPU (a hybrid MSD radix sort or CUB Onesweep, picked per chunk) or by a \
parallel radix sort on the CPU, and merged straight into the output, which is replaced \
atomically. It takes GNU sort's -c, -u, -m, -r, -S and -T. The package also holds the C++ \
library (static, with a CMake package and gpusort.pc), the Python module and the tools \
gpusort-datagen, gpusort-validate and gpusort-iofloor.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpusort_0.1.0_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# Depends from the shared libraries the executables and the module load (dpkg-shlibdeps:
# libtbb12, liburing2, libboost-program-options, libstdc++6, libc6). The CUDA runtime is
# linked statically and the driver is loaded when present, so no GPU package is needed.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What building against the static libraries needs, and what the Python module uses.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libtbb-dev, liburing-dev, pkg-config, python3-numpy")

include(CPack)
