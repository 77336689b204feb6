# Writes the version header (OUTPUT) from host/core/version.h.in at every build, so each output names
# the commit the program was built from, not the one the build directory was configured at. The file
# is rewritten only when its text changes, so an unchanged commit rebuilds nothing.
#   cmake -DSOURCE_DIR=... -DOUTPUT=... -DPROJECT_VERSION=... -P cmake/version.cmake
# A copy of the tree without its .git (one a script copied to another machine) names the commit it was
# made from in .source-githash, a file holding that hash (written by the script that copies the tree,
# never committed); there it takes precedence, since `git rev-parse` would name whatever commit a .git
# above the copy happens to hold. In a checkout of its own (SOURCE_DIR the top of a git work tree) the
# file is ignored: left behind by that script, it names the commit of its writing, not of the build.
# Uncommitted changes to tracked files add "+dirty".
execute_process(COMMAND git rev-parse --show-toplevel WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE work_tree OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
set(own_checkout FALSE)
if(work_tree)
  file(REAL_PATH ${work_tree} work_tree)
  file(REAL_PATH ${SOURCE_DIR} source_dir)
  if(work_tree STREQUAL source_dir)
    set(own_checkout TRUE)
  endif()
endif()
if(EXISTS ${SOURCE_DIR}/.source-githash AND NOT own_checkout)
  file(STRINGS ${SOURCE_DIR}/.source-githash OCTWALK_GIT_HASH LIMIT_COUNT 1)
else()
  execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE OCTWALK_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(OCTWALK_GIT_HASH)
    execute_process(COMMAND git diff --quiet HEAD -- WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE dirty
                    OUTPUT_QUIET ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      string(APPEND OCTWALK_GIT_HASH "+dirty")
    endif()
  endif()
endif()
if(NOT OCTWALK_GIT_HASH)
  set(OCTWALK_GIT_HASH "unknown")
endif()
configure_file(${SOURCE_DIR}/host/core/version.h.in ${OUTPUT} @ONLY)
