# Script mode (cmake -P), run after a test binary is built (TesseraSuiteTests.cmake):
# writes OUTPUT, a ctest file with one test per GoogleTest suite of EXECUTABLE.
# Inputs: EXECUTABLE, TARGET, OUTPUT, SERIAL (TRUE/FALSE), WORKING_DIRECTORY.
execute_process(
  COMMAND "${EXECUTABLE}" --gtest_list_tests
  WORKING_DIRECTORY "${WORKING_DIRECTORY}"
  TIMEOUT 60
  RESULT_VARIABLE result
  OUTPUT_VARIABLE listing
  ERROR_VARIABLE errors)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE} --gtest_list_tests failed (${result}):\n${listing}\n${errors}")
endif()

# The listing: a suite line "Suite." (a typed or parameterised suite may add "  # ..."),
# then one indented line per test.
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
set(current "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(current "${CMAKE_MATCH_1}")
    list(APPEND suites "${current}")
    set(count_${current} 0)
  elseif(line MATCHES "^  [^ ]" AND NOT current STREQUAL "")
    math(EXPR count_${current} "${count_${current}} + 1")
  endif()
endforeach()

set(content "# Written by discover_gtest_suites.cmake from ${EXECUTABLE} --gtest_list_tests\n")
foreach(suite IN LISTS suites)
  if(count_${suite} EQUAL 0)
    continue()
  endif()
  set(name "${TARGET}.${suite}")
  string(APPEND content
         "add_test([=[${name}]=] [=[${EXECUTABLE}]=] [=[--gtest_filter=${suite}.*]=])\n"
         "set_tests_properties([=[${name}]=] PROPERTIES WORKING_DIRECTORY "
         "[=[${WORKING_DIRECTORY}]=] COST ${count_${suite}} RUN_SERIAL ${SERIAL})\n")
endforeach()
file(WRITE "${OUTPUT}" "${content}")
