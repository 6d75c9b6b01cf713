# The ctest entries of one test binary, one per case: run after each link
# of the binary (POST_BUILD, `cmake -P`), it asks the binary for its cases
# (`BIN --list-labels`, tests/harness/test.h) and writes OUT, a file of add_test
# and set_tests_properties calls that the build tree's CTestTestfile
# includes (the TEST_INCLUDE_FILES of CMakeLists.txt).  Entry NAME:CASE
# runs `BIN =CASE`, the case alone: a failed case hides no other, and
# `ctest -R NAME` still runs every case of the binary.  A case listed as
# "CASE stress" is labelled stress in place of the suite's kind (the first
# of LABELS), gets a COST, so that a first run (no timing data yet) starts
# the long cases first, and PROCESSORS 2: its threads keep both cores of a
# small machine busy, and beside it a test of polling processes would
# wait out time slices (measured: a 0.1-s echo case took 11 s so).
#
# A binary that lists no case (one fixed sequence) or skips itself while
# listing (exit 77: no device on this host) gets one entry NAME running it
# whole, as before.  Any other failure of --list fails the build: a test
# binary that cannot say its cases would silently run none.
#
# Variables: BIN (absolute path), NAME, OUT, LABELS (;-list, passed as
# "a,b"), TIMEOUT.
if(NOT BIN OR NOT NAME OR NOT OUT)
  message(FATAL_ERROR "test-cases.cmake: BIN, NAME and OUT are required")
endif()
string(REPLACE "," ";" LABELS "${LABELS}")
execute_process(COMMAND ${BIN} --list-labels
  OUTPUT_VARIABLE listed ERROR_VARIABLE err RESULT_VARIABLE rc
  TIMEOUT 60)
if(rc EQUAL 77)
  set(listed "")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NAME} --list-labels failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" cases "${listed}")

set(props "TIMEOUT ${TIMEOUT} SKIP_RETURN_CODE 77")
set(text "# written by cmake/test-cases.cmake from `${NAME} --list-labels`\n")
if(NOT cases)
  string(APPEND text "add_test(${NAME} \"${BIN}\")\n"
    "set_tests_properties(${NAME} PROPERTIES LABELS \"${LABELS}\" ${props})\n")
endif()
foreach(line ${cases})
  if(NOT line MATCHES "^([A-Za-z0-9_]+)( stress)?$")
    message(FATAL_ERROR "${NAME}: case line \"${line}\" is not NAME [stress]")
  endif()
  set(c ${CMAKE_MATCH_1})
  set(labels ${LABELS})
  set(cost "")
  if(CMAKE_MATCH_2)
    list(REMOVE_AT labels 0)
    list(INSERT labels 0 stress)
    set(cost " COST 100 PROCESSORS 2")
  endif()
  string(APPEND text "add_test(${NAME}:${c} \"${BIN}\" \"=${c}\")\n"
    "set_tests_properties(${NAME}:${c} PROPERTIES LABELS \"${labels}\" "
    "${props}${cost})\n")
endforeach()
# Written only when changed, so that an unchanged relink leaves ctest's
# view (and the file's time) alone.
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${text}")
