# cmake --install: the library (with its SONAME), both public headers, the built-in plugins in
# lib/shardsearch/plugins (where the library and the command find them), the shardsearch
# command, a pkg-config file, a CMake package (find_package(shardsearch)) and the man page.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SHS_PLUGIN_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/shardsearch/plugins)
set(SHS_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardsearch)

install(TARGETS shardsearch shardsearch_plugin EXPORT shardsearchTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/plugin/include/shardsearch.h
  ${PROJECT_SOURCE_DIR}/plugin/include/shardsearch_plugin.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${SHS_STRATEGIES} LIBRARY DESTINATION ${SHS_PLUGIN_INSTALL_DIR})
install(TARGETS shardsearch_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
configure_file(${PROJECT_SOURCE_DIR}/docs/shardsearch.1.in ${PROJECT_BINARY_DIR}/shardsearch.1 @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shardsearch.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# the .pc file finds the prefix from where it is installed (cmake --install --prefix P)
file(RELATIVE_PATH SHS_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" SHS_PC_TO_PREFIX "${SHS_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/shardsearch.pc.in
  ${PROJECT_BINARY_DIR}/shardsearch.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/shardsearch.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(EXPORT shardsearchTargets NAMESPACE shardsearch:: DESTINATION ${SHS_CMAKE_INSTALL_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/shardsearchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/shardsearchConfig.cmake INSTALL_DESTINATION ${SHS_CMAKE_INSTALL_DIR}
  PATH_VARS SHS_PLUGIN_INSTALL_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/shardsearchConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/shardsearchConfig.cmake
  ${PROJECT_BINARY_DIR}/shardsearchConfigVersion.cmake DESTINATION ${SHS_CMAKE_INSTALL_DIR})
