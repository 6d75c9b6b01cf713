# The list of libsmart's public functions, read from the public headers, as
# a linker version script: the shared library exports these and nothing
# else (internal smart__*, smart_tp_* and other helpers stay local), each
# under a version node (docs/design.md §12, "The ABI promise").
#
# Run at build time:
#   cmake -DHEADER_DIR=include/smart -DNODES=abi/nodes.txt -DVERSION=X.Y.Z
#         -DOUT=smart.map -P this
#
# The headers list the functions: one added to include/smart/*.h is
# exported on the next build.  abi/nodes.txt says which version node a
# function joined after SMART_<major>.0; every function it does not name
# is in SMART_<major>.0.  Nodes chain (SMART_1.1 inherits SMART_1.0), and
# the list is checked here: a node of another major or above the library's
# minor version, a function named twice or declared in no header stops the
# build.  The headers are read by a small parser for their plain style
# (Linux kernel C): comments and preprocessor lines are dropped, brace
# bodies (structs, enums, static inline functions) collapsed, and every
# remaining top-level statement that is not static or a typedef and has a
# parameter list declares the function named just before it.  Anything it cannot read stops the build rather than
# silently dropping a function; tests/install/exports.sh checks the result
# against the compiler's own reading of the headers.
cmake_minimum_required(VERSION 3.16)

if(NOT HEADER_DIR OR NOT NODES OR NOT VERSION OR NOT OUT)
  message(FATAL_ERROR "usage: cmake -DHEADER_DIR=<dir> -DNODES=<file> "
    "-DVERSION=<X.Y.Z> -DOUT=<file> -P public-symbols.cmake")
endif()
if(NOT VERSION MATCHES "^([0-9]+)\\.([0-9]+)\\.[0-9]+$")
  message(FATAL_ERROR "VERSION '${VERSION}' is not X.Y.Z")
endif()
set(major ${CMAKE_MATCH_1})
set(minor ${CMAKE_MATCH_2})
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

# abi/nodes.txt: "SMART_<major>.<minor> function" lines; node_<minor> holds
# the functions of that node, minors the nodes named.
file(STRINGS "${NODES}" lines ENCODING UTF-8)
set(minors "")
set(listed "")
foreach(l ${lines})
  string(STRIP "${l}" l)
  if(l STREQUAL "" OR l MATCHES "^#")
    continue()
  endif()
  if(NOT l MATCHES "^SMART_([0-9]+)\\.([0-9]+)[ \t]+(smart_[A-Za-z0-9_]+)$")
    message(FATAL_ERROR
      "${NODES}: cannot read '${l}' (want: SMART_X.Y smart_name)")
  endif()
  set(fn ${CMAKE_MATCH_3})
  set(mj ${CMAKE_MATCH_1})
  math(EXPR m "${CMAKE_MATCH_2}")
  if(NOT mj EQUAL major OR m LESS 1 OR m GREATER minor)
    message(FATAL_ERROR "${NODES}: '${l}': no later node of version "
      "${VERSION} (they are SMART_${major}.1 up to its minor; a new node "
      "raises SMART_VERSION_MINOR in include/smart/smart.h)")
  endif()
  if(NOT fn IN_LIST names)
    message(FATAL_ERROR "${NODES}: ${fn} is declared in no ${HEADER_DIR}/*.h")
  endif()
  if(fn IN_LIST listed)
    message(FATAL_ERROR "${NODES}: ${fn} is listed twice")
  endif()
  list(APPEND listed ${fn})
  list(APPEND node_${m} ${fn})
  list(APPEND minors ${m})
endforeach()
set(node_0 ${names})
if(listed)
  list(REMOVE_ITEM node_0 ${listed})
endif()

set(map "/* Generated from include/smart/*.h and abi/nodes.txt by "
  "cmake/public-symbols.cmake. */\n")
string(APPEND map "SMART_${major}.0 {\n\tglobal:\n")
foreach(n ${node_0})
  string(APPEND map "\t\t${n};\n")
endforeach()
string(APPEND map "\tlocal:\n\t\t*;\n};\n")
set(prev 0)
foreach(m RANGE ${minor})
  if(NOT m IN_LIST minors)
    continue()
  endif()
  list(SORT node_${m})
  string(APPEND map "SMART_${major}.${m} {\n\tglobal:\n")
  foreach(n ${node_${m}})
    string(APPEND map "\t\t${n};\n")
  endforeach()
  string(APPEND map "} SMART_${major}.${prev};\n")
  set(prev ${m})
endforeach()
# Rewrite only on change, so that an edited comment relinks nothing.
file(WRITE "${OUT}.tmp" "${map}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
