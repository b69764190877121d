# run(command args...): runs a command from a ctest script (cmake -P), echoing it first, and
# fails the script with the command line if it fails. Shared by the sub-build tests
# (test/consumer, test/fuzz).
function(run)
  string(REPLACE ";" " " _shown "${ARGN}")
  message(STATUS "+ ${_shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${_shown}")
  endif()
endfunction()
