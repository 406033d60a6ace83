# Warnings are errors everywhere; sanitizers come from WARREN_SANITIZE (see CMakePresets.json).
add_compile_options(-Wall -Wextra -Werror -Wpedantic -Wshadow -Wnon-virtual-dtor)

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
