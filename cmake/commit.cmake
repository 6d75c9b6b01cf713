# The commit the tools were built from, for their records
# (bench/kit/report.c, kit_rec_provenance): run at every build by the
# smart_commit target; OUT is rewritten only when the text changed, so an
# unchanged commit rebuilds nothing.  "unknown" outside a git checkout;
# "-dirty" when tracked files differ from the commit.
execute_process(COMMAND git -C ${SRC} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE c OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR c STREQUAL "")
  set(c unknown)
else()
  execute_process(COMMAND git -C ${SRC} status --porcelain
    --untracked-files=no OUTPUT_VARIABLE d ERROR_QUIET)
  if(NOT d STREQUAL "")
    set(c "${c}-dirty")
  endif()
endif()
set(text "#define SMART_TOOLS_COMMIT \"${c}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
