# What `cmake --install` puts in place: the gpusort command, its manual and bash completion,
# the measurement tools (their own folders' rules), the public headers, the static libraries
# with an exported CMake package (find_package(gpusort) -> gpusort::core), a pkg-config file
# (gpusort.pc), the Python module (python/), the license and the changelog.
include(CMakePackageConfigHelpers)

set(gpusort_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/gpusort)
set(gpusort_libraries gpusort_core gpusort_cpu gpusort_base)
if(GPUSORT_HAVE_CUDA)
  list(INSERT gpusort_libraries 1 gpusort_cuda)  # after core, which links it; before base
endif()

install(TARGETS gpusort RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES man/gpusort.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# bash-completion loads completions/<command> on demand, also from <prefix>/share beside
# <prefix>/bin.
install(FILES completion/gpusort.bash RENAME gpusort
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# share/doc/gpusort: copyright is the license statement in Debian's format, which the .deb
# needs there.
install(FILES LICENSE CHANGELOG.md README.md cmake/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# --- Library: headers, static libraries, CMake package ----------------------------------------
install(DIRECTORY include/gpusort DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/gpusort/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/gpusort)
install(TARGETS ${gpusort_libraries} EXPORT gpusortTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT gpusortTargets NAMESPACE gpusort:: DESTINATION ${gpusort_cmake_dir})
configure_package_config_file(cmake/gpusortConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gpusortConfig.cmake INSTALL_DESTINATION ${gpusort_cmake_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpusortConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gpusortConfig.cmake
              ${PROJECT_BINARY_DIR}/gpusortConfigVersion.cmake
        DESTINATION ${gpusort_cmake_dir})

# --- pkg-config ---------------------------------------------------------------------------------
# The libraries are static, so `pkg-config --libs gpusort` names everything they link, in link
# order: ours, the CUDA runtime (static, from the toolkit this build used), threads; tbb and
# liburing come through Requires.
set(gpusort_pc_libs "")
foreach(lib IN LISTS gpusort_libraries)
  string(APPEND gpusort_pc_libs " -l${lib}")
endforeach()
if(GPUSORT_HAVE_CUDA)
  string(APPEND gpusort_pc_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
endif()
string(APPEND gpusort_pc_libs " -pthread")
string(STRIP "${gpusort_pc_libs}" gpusort_pc_libs)
# The prefix is the one installed into, known only at install time (cmake --install --prefix,
# CPack's /usr): the file is configured twice, the second time when it is installed, staged
# under a name of its own for each destination (installs into several prefixes may run at
# once) and then installed as the other files are.
set(gpusort_pc_prefix "@CMAKE_INSTALL_PREFIX@")
configure_file(cmake/gpusort.pc.in ${PROJECT_BINARY_DIR}/gpusort.pc.in @ONLY)
install(CODE "
  string(MD5 gpusort_pc_key \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(gpusort_pc \"${PROJECT_BINARY_DIR}/pkgconfig/\${gpusort_pc_key}/gpusort.pc\")
  configure_file(\"${PROJECT_BINARY_DIR}/gpusort.pc.in\" \"\${gpusort_pc}\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
       TYPE FILE FILES \"\${gpusort_pc}\")
")
