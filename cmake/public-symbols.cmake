# The list of libsmart's public functions, read from the public headers, as
# a linker version script: the shared library exports these and nothing
# else (internal smart__*, smart_tp_* and other helpers stay local).
#
# Run at build time:  cmake -DHEADER_DIR=include/smart -DOUT=smart.map -P this
#
# The headers are the only list: a function added to include/smart/*.h is
# exported on the next build, with no second list to keep in step.  This is
# a small parser for the headers' plain style (Linux kernel C): comments
# and preprocessor lines are dropped, brace bodies (structs, enums, static
# inline functions) collapsed, and every remaining top-level statement that
# is not static or a typedef and has a parameter list declares the function
# named just before it.  Anything it cannot read stops the build rather than
# silently dropping a function; tests/install/exports.sh checks the result
# against the compiler's own reading of the headers.
cmake_minimum_required(VERSION 3.16)

if(NOT HEADER_DIR OR NOT OUT)
  message(FATAL_ERROR "usage: cmake -DHEADER_DIR=<dir> -DOUT=<file> -P public-symbols.cmake")
endif()
file(GLOB HEADERS ${HEADER_DIR}/*.h)

set(names "")
foreach(h ${HEADERS})
  file(READ "${h}" text)
  # Block comments (no nesting in C), then line comments.
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " text "${text}")
  string(REGEX REPLACE "//[^\n]*" " " text "${text}")
  # Preprocessor: join continued lines, drop the C++ linkage blocks (their
  # braces are not C), then every directive line.
  string(REGEX REPLACE "\\\\\n" " " text "${text}")
  string(REGEX REPLACE "#[ \t]*ifdef[ \t]+__cplusplus[^#]*#[ \t]*endif" " "
    text "${text}")
  string(REGEX REPLACE "(^|\n)[ \t]*#[^\n]*" "\n" text "${text}")
  # CMake lists use ';': protect it before anything becomes a list.
  string(REPLACE ";" "@SEMI@" text "${text}")
  string(REGEX REPLACE "[ \t\r\n]+" " " text "${text}")
  # Collapse brace bodies from the innermost out; a body ends a statement
  # (a static inline function has no ';' after it).
  set(prev "")
  while(NOT prev STREQUAL text)
    set(prev "${text}")
    string(REGEX REPLACE "{[^{}]*}" "@BODY@" text "${text}")
  endwhile()
  if(text MATCHES "[{}]")
    message(FATAL_ERROR "${h}: unbalanced braces")
  endif()
  string(REPLACE "@BODY@" "{}@SEMI@" text "${text}")
  string(REPLACE "@SEMI@" ";" stmts "${text}")
  foreach(s ${stmts})
    string(STRIP "${s}" s)
    if(s STREQUAL "" OR s MATCHES "^(static|typedef|extern \"C\")[ {]"
       OR NOT s MATCHES "\\(")
      continue()
    endif()
    # Statements with a parameter list left: function declarations.
    if(NOT s MATCHES "(^|[^A-Za-z0-9_])(smart_[A-Za-z0-9_]*) *\\(")
      message(FATAL_ERROR "${h}: cannot read the declaration '${s}' "
        "(public functions are named smart_*)")
    endif()
    list(APPEND names ${CMAKE_MATCH_2})
  endforeach()
endforeach()

list(REMOVE_DUPLICATES names)
list(SORT names)
if(NOT names)
  message(FATAL_ERROR "no public function found in ${HEADER_DIR}/*.h")
endif()
set(map "/* Generated from include/smart/*.h by cmake/public-symbols.cmake. */\n{\n\tglobal:\n")
foreach(n ${names})
  string(APPEND map "\t\t${n};\n")
endforeach()
string(APPEND map "\tlocal:\n\t\t*;\n};\n")
# Rewrite only on change, so that an edited comment relinks nothing.
file(WRITE "${OUT}.tmp" "${map}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
