# Where an installation puts things (Debian's layout, the same in both .deb packages), and
# warren_install_plugin() for the plugins that install themselves. Included from the top-level
# CMakeLists.txt before any add_subdirectory, so that plugins/*/CMakeLists.txt can use it;
# WarrenPackaging.cmake, included last, adds the rest of the install rules and CPack.
include(GNUInstallDirs)

# warren.toml and the systemd units. Empty (the default): decided when installing, from the
# prefix in force then (`cmake --install --prefix`, cpack's /usr): /etc/warren and
# /lib/systemd/system for the prefix /usr (the packages), PREFIX/etc/warren and
# PREFIX/lib/systemd/system for any other, so that an install to a prefix writes only under it.
# A path given here wins: an absolute one as it is, a relative one under the prefix.
set(WARREN_INSTALL_SYSCONFDIR "" CACHE PATH
    "Where warren.toml goes (empty: /etc/warren for the prefix /usr, else PREFIX/etc/warren)")
set(WARREN_INSTALL_SYSTEMD_UNITDIR "" CACHE PATH
    "Where the systemd units go (empty: /lib/systemd/system for the prefix /usr, else PREFIX/lib/systemd/system)")
# Relative to the prefix (/usr in the packages).
set(WARREN_INSTALL_PLUGINDIR lib/warren/plugins)
# warren-worker, the child process of a worker with isolation = "process": where
# runtime/worker_binary.cc looks for it from /usr/bin/warren (../lib/warren).
set(WARREN_INSTALL_WORKERDIR lib/warren)
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(WARREN_INSTALL_DEV_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE})  # Debian multiarch
else()
  set(WARREN_INSTALL_DEV_LIBDIR ${CMAKE_INSTALL_LIBDIR})
endif()
set(WARREN_INSTALL_CMAKEDIR ${WARREN_INSTALL_DEV_LIBDIR}/cmake/Warren)
# The loader refuses group- or other-writable directories: never inherit a loose umask.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# warren_install_plugin(NAME): installs plugin NAME (a warren_add_plugin target) into the
# packaged plugin directory, in the `warren` package (CPack component runtime), root-owned and
# writable by nobody else: the loader refuses a plugin file that others could replace.
function(warren_install_plugin name)
  install(TARGETS ${name}
          LIBRARY DESTINATION ${WARREN_INSTALL_PLUGINDIR}
          PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
          COMPONENT runtime)
endfunction()
