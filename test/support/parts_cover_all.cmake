# ctest NAME.parts (test/CMakeLists.txt, gcl_add_test with PARTS): fails unless every test case
# of a program split into parts runs in one of them, and every part runs at least one. A case
# that no part's filter selects would run nowhere, and nothing else would say so (four cases of
# transport_hybrid once did). Which cases a filter selects, Boost.Test says itself
# (support/list_selected_cases.cpp).
#   cmake -DPROGRAM=path/to/test_NAME -P parts_cover_all.cmake -- FILTER...
if(NOT PROGRAM)
  message(FATAL_ERROR "usage: cmake -DPROGRAM=path -P parts_cover_all.cmake -- FILTER...")
endif()

# fail(text...): prints the text as it is, then fails. (FATAL_ERROR's own text is wrapped at
# word breaks, and where depends on the length of the program's path: a check that reads it
# would then depend on where the build lives.)
function(fail)
  string(CONCAT text ${ARGN})
  message(NOTICE "${text}")
  message(FATAL_ERROR "the parts check failed (above)")
endfunction()

# selected(out [--run_test=FILTER]): the cases the program runs with those arguments.
function(selected out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env GCL_TEST_LIST_SELECTED=1 ${PROGRAM} ${ARGN}
                  OUTPUT_VARIABLE text ERROR_VARIABLE errors RESULT_VARIABLE rc)
  string(REGEX MATCHALL "gcl-selected-case: [^\n]*" lines "${text}")
  if(NOT rc EQUAL 0 OR NOT lines)
    string(REPLACE ";" " " shown "${ARGN}")
    fail("${PROGRAM} ${shown} selects no test case (exit ${rc}): ${errors}${text}")
  endif()
  list(TRANSFORM lines REPLACE "^gcl-selected-case: " "")
  set(${out} ${lines} PARENT_SCOPE)
endfunction()

set(filters)
set(after_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_separator)
    list(APPEND filters "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT filters)
  message(FATAL_ERROR "parts_cover_all.cmake: no filters given (after --)")
endif()

selected(all)
set(covered)
foreach(filter IN LISTS filters)
  selected(cases --run_test=${filter})
  list(LENGTH cases n)
  message(STATUS "--run_test=${filter}: ${n} case(s)")
  list(APPEND covered ${cases})
endforeach()
set(missing ${all})
list(REMOVE_ITEM missing ${covered})
if(missing)
  string(REPLACE ";" ", " missing "${missing}")
  fail("${PROGRAM}: test cases in no part: ${missing} (add each to a PARTS filter in the "
       "program's CMakeLists.txt)")
endif()
list(LENGTH all n)
message(STATUS "every one of the ${n} test cases runs in some part")
