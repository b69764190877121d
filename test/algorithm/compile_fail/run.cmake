# Compiles SOURCE with the test's compiler and prints the compiler's output, so that ctest can
# match the expected static_assert text with PASS_REGULAR_EXPRESSION. Prints
# "GCL_COMPILED_UNEXPECTEDLY" if a compile-fail source compiled, and "GCL_CONTROL_FAILED" if the
# control build (-DCONTROL=ON, which must compile) did not.
set(_flags -std=c++20 -fsyntax-only "-I${INCLUDE}")
if(CONTROL)
  list(APPEND _flags -DGCL_CONTROL)
endif()
execute_process(COMMAND "${CXX}" ${_flags} "${SOURCE}"
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(CONTROL)
  if(_rc EQUAL 0)
    message("GCL_CONTROL_COMPILED")
  else()
    message(FATAL_ERROR "GCL_CONTROL_FAILED")
  endif()
elseif(_rc EQUAL 0)
  message(FATAL_ERROR "GCL_COMPILED_UNEXPECTEDLY")
endif()
