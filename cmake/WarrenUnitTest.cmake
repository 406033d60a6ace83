# warren_add_unit_test() and the shared test-support target, for every directory with unit tests:
# tests/ and each plugins/<name>/test/ (included from the top-level CMakeLists.txt before any
# add_subdirectory, since plugins/ comes before tests/). Only when WARREN_BUILD_TESTS is on.
include(GoogleTest)

# warren_test_support: headers every unit test gets (tests/support: a temporary directory,
# eventually(), the skip-or-fail of tests that need a service).
add_library(warren_test_support INTERFACE)
target_include_directories(warren_test_support INTERFACE ${PROJECT_SOURCE_DIR}/tests/support)

# warren_tsan_targets: what the tsan preset builds; scripts/test then runs every unit test
# (`ctest -L unit`) and the other tests labelled `tsan` (integration tests) under
# ThreadSanitizer. Every warren_add_unit_test() adds itself, so no unit test that starts a thread
# can be left out of the tsan run (building and running them all there costs a few minutes on
# 2 cores: see scripts/test); tests/CMakeLists.txt adds the host and the test plugins that the
# integration tests labelled `tsan` load, tests/unit/transport the RabbitMQ conformance suite.
add_custom_target(warren_tsan_targets)

# warren_add_unit_test(NAME SOURCES a.cc b.cc LINK_LIBRARIES libs... [LABELS label...]
#                      [ENVIRONMENT VAR=value...])
# Tests are labelled `unit` plus LABELS, and run with ENVIRONMENT (generator expressions work). Every unit test runs in the default, asan and tsan
# presets; LABELS tsan is no longer needed for that (it stays harmless).
function(warren_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK_LIBRARIES;LABELS;ENVIRONMENT" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBRARIES} warren_test_support GTest::gtest GTest::gmock GTest::gtest_main)
  set(environment)
  if(ARG_ENVIRONMENT)
    set(environment ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS unit ${environment} DISCOVERY_TIMEOUT 120)
  if(ARG_LABELS)
    warren_label_discovered_tests(${name} unit ${ARG_LABELS})
  endif()
  add_dependencies(warren_tsan_targets ${name})
endfunction()

# warren_label_discovered_tests(TARGET label...): the tests gtest_discover_tests() found in TARGET
# get exactly these labels. gtest_discover_tests cannot pass a list-valued property: the labels
# are set on the list it leaves in TARGET_TESTS, from an include file that ctest reads after its
# own (call this after gtest_discover_tests).
function(warren_label_discovered_tests name)
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
  file(WRITE ${labels_file}
       "if(${name}_TESTS)\n"
       "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${ARGN}\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()
