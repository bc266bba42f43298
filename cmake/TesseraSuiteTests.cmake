# One ctest per GoogleTest suite of a test binary, instead of one per test.
#
# gtest_discover_tests starts the binary once for every test. For the binaries that link
# libtorch that start is most of the test's time: the loader maps ~340 shared libraries
# (about 1 s a start, 3 s under AddressSanitizer) before the first test runs. A suite runs
# its tests in one process, in order, as `BINARY --gtest_filter=Suite.*` does by hand.
#
# tessera_discover_suites(TARGET [SERIAL]) lists the binary's suites after each build
# (`--gtest_list_tests`, discover_gtest_suites.cmake) and adds a test named
# `TARGET.Suite` for each; SERIAL gives them RUN_SERIAL. Each test's COST is its number of
# tests, so ctest -j starts the long suites first.
function(tessera_discover_suites target)
  cmake_parse_arguments(ARG "SERIAL" "" "" ${ARGN})
  set(suites_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  set(serial FALSE)
  if(ARG_SERIAL)
    set(serial TRUE)
  endif()
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-DEXECUTABLE=$<TARGET_FILE:${target}>" "-DTARGET=${target}"
            "-DOUTPUT=${suites_file}" "-DSERIAL=${serial}"
            "-DWORKING_DIRECTORY=${CMAKE_CURRENT_BINARY_DIR}"
            -P "${PROJECT_SOURCE_DIR}/cmake/discover_gtest_suites.cmake"
    BYPRODUCTS "${suites_file}"
    VERBATIM)
  # ctest reads the list the last build wrote; before the first build there is none.
  file(WRITE "${include_file}"
       "if(EXISTS \"${suites_file}\")\n"
       "  include(\"${suites_file}\")\n"
       "else()\n"
       "  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
