# warren_add_plugin(NAME SOURCES src... [LINK_LIBRARIES libs...] [OUTPUT_DIRECTORY dir])
#
# Builds lib<NAME>.so the way the host expects: hidden visibility (only warren_plugin_entry is
# exported), every symbol resolved at link time (-Wl,--no-undefined), no lib prefix surprises.
# Used in-tree and, through find_package(Warren), by out-of-tree plugins.
set(_WARREN_PLUGIN_MODULE_DIR ${CMAKE_CURRENT_LIST_DIR})

function(warren_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "warren_add_plugin(${name}): SOURCES is required")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  if(TARGET Warren::sdk)
    target_link_libraries(${name} PRIVATE Warren::sdk)
  else()
    target_link_libraries(${name} PRIVATE warren_sdk)
  endif()
  if(ARG_LINK_LIBRARIES)
    target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBRARIES})
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    SUFFIX ".so"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${name} PRIVATE -Wl,--no-undefined
                      -Wl,--version-script=${_WARREN_PLUGIN_MODULE_DIR}/warren_plugin.map)
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS ${_WARREN_PLUGIN_MODULE_DIR}/warren_plugin.map)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  elseif(DEFINED WARREN_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${WARREN_PLUGIN_OUTPUT_DIR})
  endif()
endfunction()
