# Warnings everywhere, errors only when asked: WARREN_WERROR is on in CMakePresets.json (so in
# scripts/test and CI) and off by default, so that a packager's or user's plain
# `cmake -DCMAKE_BUILD_TYPE=Release` build is not stopped by a new compiler's new warning (GCC 12's
# -O3 has false positives inside std::string). Sanitizers come from WARREN_SANITIZE (presets).
option(WARREN_WERROR "Treat compiler warnings as errors (on in the presets and CI)" OFF)
# (-Werror in its historical place: the same command lines, so ccache entries stay valid.)
add_compile_options(-Wall -Wextra $<$<BOOL:${WARREN_WERROR}>:-Werror> -Wpedantic -Wshadow
                    -Wnon-virtual-dtor)

if(WARREN_SANITIZE)
  add_compile_options(-fsanitize=${WARREN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${WARREN_SANITIZE})
endif()

# A compiler cache when one is installed (scripts/bootstrap installs ccache); WARREN_CCACHE=OFF
# to build without it.
option(WARREN_CCACHE "Compile through ccache when it is installed" ON)
find_program(WARREN_CCACHE_PROGRAM ccache)
if(WARREN_CCACHE AND WARREN_CCACHE_PROGRAM)
  set(CMAKE_C_COMPILER_LAUNCHER ${WARREN_CCACHE_PROGRAM})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${WARREN_CCACHE_PROGRAM})
endif()
