# Installation and Debian packages (`cpack -G DEB` in the build directory). Included from the
# top-level CMakeLists.txt after every target exists. Two CPack components, two packages:
#
#   runtime -> warren_<version>_<arch>.deb
#     /usr/bin/warren, /usr/lib/warren/warren-worker (isolation = "process"), /etc/warren/warren.toml (conffile), /usr/lib/warren/plugins/ (root-owned,
#     0755, with the example plugins), systemd units warren.service and warren@.service, and the
#     maintainer scripts of packaging/debian/ (the `warren` system user, /var/lib/warren).
#   dev     -> warren-dev_<version>_<arch>.deb
#     the SDK headers (/usr/include/warren), the test harness (libwarren_testing.a) with the
#     host-side ABI adapter it serves plugins through (libwarren_host_abi.a) and the host
#     libraries it routes, retries and loads plugins with (libwarren_config.a, _transport, _retry,
#     _plugin: no headers, linked only through Warren::testing), and the CMake package
#     (find_package(Warren): Warren::sdk, Warren::testing, warren_add_plugin()).
#
# Only these two components are packaged (CPACK_COMPONENTS_ALL): an install() rule without one
# lands in "Unspecified" and in no package.
#
# The paths and warren_install_plugin() are in WarrenInstallLayout.cmake; the example plugins
# install themselves (plugins/*/CMakeLists.txt).
include(CMakePackageConfigHelpers)

set(WARREN_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/packaging)

# ---- runtime: the host ------------------------------------------------------------------------
# /usr/bin/warren: host/src/cli/CMakeLists.txt (COMPONENT runtime).
# The config and the units go outside the prefix only for the prefix /usr, which is known only
# when installing (WarrenInstallLayout.cmake): this code runs first and sets the two directories,
# without their leading slash, for the DESTINATIONs below ("/${...}", so that CMake treats them
# as the absolute paths they are, DESTDIR and cpack's staging included).
install(CODE "set(warren_sysconfdir_choice \"${WARREN_INSTALL_SYSCONFDIR}\")
set(warren_unitdir_choice \"${WARREN_INSTALL_SYSTEMD_UNITDIR}\")" COMPONENT runtime)
install(CODE [[
  function(warren_install_dir choice packaged under_prefix out)
    if(choice STREQUAL "")
      if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
        set(choice "${packaged}")
      else()
        set(choice "${CMAKE_INSTALL_PREFIX}/${under_prefix}")
      endif()
    elseif(NOT IS_ABSOLUTE "${choice}")
      set(choice "${CMAKE_INSTALL_PREFIX}/${choice}")
    endif()
    string(REGEX REPLACE "^/+" "" choice "${choice}")
    set(${out} "${choice}" PARENT_SCOPE)
  endfunction()
  warren_install_dir("${warren_sysconfdir_choice}" /etc/warren etc/warren warren_sysconfdir)
  warren_install_dir("${warren_unitdir_choice}" /lib/systemd/system lib/systemd/system
                     warren_unitdir)
]] COMPONENT runtime)
install(FILES ${PROJECT_SOURCE_DIR}/conf/warren.toml
        DESTINATION "/\${warren_sysconfdir}"
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
        COMPONENT runtime)
install(DIRECTORY DESTINATION ${WARREN_INSTALL_PLUGINDIR} COMPONENT runtime)
# The example plugins in it: warren_install_plugin() in plugins/order_email, plugins/sales_ranking.
install(FILES ${PROJECT_SOURCE_DIR}/docs/operations.md
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/warren COMPONENT runtime)
install(FILES ${WARREN_PACKAGING_DIR}/systemd/warren.service ${WARREN_PACKAGING_DIR}/systemd/warren@.service
        DESTINATION "/\${warren_unitdir}" COMPONENT runtime)

# ---- dev: SDK, harness, CMake package ---------------------------------------------------------
set_target_properties(warren_sdk PROPERTIES EXPORT_NAME sdk)
set_target_properties(warren_host_abi PROPERTIES EXPORT_NAME host_abi)
set_target_properties(warren_testing PROPERTIES EXPORT_NAME testing OUTPUT_NAME warren_testing)
# The host's libraries the harness links (sdk/testing/CMakeLists.txt): exported only because a
# static library's dependencies must be; their headers are not installed.
set(warren_harness_host_libraries warren_config warren_transport warren_retry warren_plugin
                                   warren_isolation)
foreach(library IN LISTS warren_harness_host_libraries)
  string(REPLACE "warren_" "host_" export_name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sdk/include/warren ${PROJECT_SOURCE_DIR}/sdk/host_abi/include/warren
                  ${PROJECT_SOURCE_DIR}/sdk/testing/include/warren
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        FILES_MATCHING PATTERN "*.h")
install(TARGETS warren_sdk warren_host_abi warren_testing ${warren_harness_host_libraries}
        EXPORT WarrenTargets
        ARCHIVE DESTINATION ${WARREN_INSTALL_DEV_LIBDIR} COMPONENT dev
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/docs/sdk.md
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/warren-dev COMPONENT dev)
install(EXPORT WarrenTargets NAMESPACE Warren:: DESTINATION ${WARREN_INSTALL_CMAKEDIR}
        COMPONENT dev)

# The fingerprint of this build's compiler, baked into the package: an out-of-tree plugin built
# with another compiler is warned about at find_package() time (the plugin ABI is plain C and
# still loads, but the C++ harness library must link with the plugin's standard library).
set(WARREN_BUILD_COMPILER_ID ${CMAKE_CXX_COMPILER_ID})
set(WARREN_BUILD_COMPILER_VERSION ${CMAKE_CXX_COMPILER_VERSION})
set(WARREN_BUILD_FINGERPRINT "${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION};std=${CMAKE_CXX_STANDARD}")
file(STRINGS ${PROJECT_SOURCE_DIR}/sdk/include/warren/abi.h abi_lines
     REGEX "^#define WARREN_ABI_(MAJOR|MINOR) [0-9]+")
string(REGEX REPLACE ".*WARREN_ABI_MAJOR ([0-9]+).*" "\\1" WARREN_ABI_MAJOR "${abi_lines}")
string(REGEX REPLACE ".*WARREN_ABI_MINOR ([0-9]+).*" "\\1" WARREN_ABI_MINOR "${abi_lines}")
set(WARREN_PACKAGED_PLUGIN_DIR /usr/${WARREN_INSTALL_PLUGINDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/sdk/cmake/WarrenConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/WarrenConfig.cmake
                              INSTALL_DESTINATION ${WARREN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/WarrenConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/WarrenConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/WarrenConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/sdk/cmake/WarrenPlugin.cmake
              ${PROJECT_SOURCE_DIR}/sdk/cmake/warren_plugin.map
        DESTINATION ${WARREN_INSTALL_CMAKEDIR} COMPONENT dev)

# ---- CPack: the two .deb packages -------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME warren)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "Warren")
set(CPACK_PACKAGE_CONTACT "Warren maintainers <warren-maintainers@localhost>")
# Empty: the first line of each CPACK_DEBIAN_<COMPONENT>_DESCRIPTION is that package's summary.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_STRIP_FILES ON)  # the binary and plugins without their debug info

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME warren)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)  # Depends from dpkg-shlibdeps
# passwd: useradd, in postinst. libpq5 and libsqlite3-0: loaded with dlopen when PostgreSQL or a
# SQLite queue is configured (host/src/system_library), so dpkg-shlibdeps cannot see them.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "passwd, libpq5, libsqlite3-0")
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "Worker host for message-consumer plugins\n"
    "Warren consumes RabbitMQ queues for handlers written as .so plugins against a small C++ SDK,\n"
    "retries and dead-letters failures, and exposes Prometheus metrics. Ships the warren binary,\n"
    "example plugins, /etc/warren/warren.toml and the systemd units warren.service and\n"
    "warren@.service.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${WARREN_PACKAGING_DIR}/debian/conffiles ${WARREN_PACKAGING_DIR}/debian/postinst
    ${WARREN_PACKAGING_DIR}/debian/prerm ${WARREN_PACKAGING_DIR}/debian/postrm)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME warren-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The harness links the host's config loader (toml++) and plugin loader (Boost.DLL, header-only
# over std::filesystem): find_package(Warren) looks for both (WarrenConfig.cmake.in).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "warren (= ${PROJECT_VERSION}), libtomlplusplus-dev, libboost-dev (>= 1.74)")
set(CPACK_DEBIAN_DEV_PACKAGE_RECOMMENDS "cmake (>= 3.25), g++ (>= 4:12), libgtest-dev")
string(CONCAT CPACK_DEBIAN_DEV_DESCRIPTION
    "Warren plugin SDK, test harness and CMake package\n"
    "Everything to build a Warren plugin out of tree: the header-only SDK (<warren/sdk.h>), the\n"
    "in-memory test harness (warren::testing::Harness) and find_package(Warren) with\n"
    "warren_add_plugin(). `warren plugin new NAME` writes a project to start from.")

include(CPack)
