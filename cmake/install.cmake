# Install rules: headers, the gcl::gcl (and gcl::tcp) targets, a config and a version file, the
# pkg-config files and the license (<prefix>/share/doc/gcl/LICENSE).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY include/gcl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
set(_gcl_targets gcl)
if(TARGET gcl_tcp)
  list(APPEND _gcl_targets gcl_tcp)
endif()
install(TARGETS ${_gcl_targets} EXPORT gclTargets)
install(EXPORT gclTargets NAMESPACE gcl:: DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/gcl)
configure_package_config_file(cmake/gclConfig.cmake.in ${PROJECT_BINARY_DIR}/gclConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/gcl)
# Header-only: any architecture may use the package.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gclConfigVersion.cmake
  COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${PROJECT_BINARY_DIR}/gclConfig.cmake ${PROJECT_BINARY_DIR}/gclConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/gcl)

# pkg-config: `pkg-config --cflags gcl` for builds without CMake. Header-only, so the files go to
# the architecture-independent share/pkgconfig.
configure_file(cmake/gcl.pc.in ${PROJECT_BINARY_DIR}/gcl.pc @ONLY)
set(_gcl_pc_files ${PROJECT_BINARY_DIR}/gcl.pc)
if(TARGET gcl_tcp)
  configure_file(cmake/gcl-tcp.pc.in ${PROJECT_BINARY_DIR}/gcl-tcp.pc @ONLY)
  list(APPEND _gcl_pc_files ${PROJECT_BINARY_DIR}/gcl-tcp.pc)
endif()
install(FILES ${_gcl_pc_files} DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig)
