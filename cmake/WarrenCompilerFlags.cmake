# Warnings are errors everywhere; sanitizers come from WARREN_SANITIZE (see CMakePresets.json).
add_compile_options(-Wall -Wextra -Werror -Wpedantic -Wshadow -Wnon-virtual-dtor)

if(WARREN_SANITIZE)
  add_compile_options(-fsanitize=${WARREN_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${WARREN_SANITIZE})
endif()
