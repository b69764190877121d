# Drives the header check (test/headers/CMakeLists.txt) from ctest for one compiler:
#   cmake -DCOMPILER=g++|clang++ -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DWITH_TCP=ON|OFF
#         [-DJOBS=2] -P run.cmake
# Configures the sub-project with that compiler in WORK_DIR and builds it (GCC: every header's own
# TU, and every inline function at -O2 and -O3; clang: one TU of every header; both: the templates
# instantiated over each transport), going on past failures so that the output names every
# header that fails. A compiler
# that is not installed prints "GCL_SKIP: ..." (the test is then reported as skipped).
cmake_minimum_required(VERSION 3.25)
foreach(v COMPILER SOURCE_DIR WORK_DIR GENERATOR WITH_TCP)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()

find_program(_cxx NAMES ${COMPILER} NO_CACHE)
if(NOT _cxx)
  message("GCL_SKIP: ${COMPILER} is not installed (scripts/packages.sh installs it), so the "
          "headers were not checked with it")
  return()
endif()

set(_bin ${WORK_DIR}/${COMPILER})
file(REMOVE_RECURSE ${_bin})
# Exactly the flags of test/headers/CMakeLists.txt: none from the environment or a build type.
unset(ENV{CXXFLAGS})
unset(ENV{CPPFLAGS})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/headers -B ${_bin} -G "${GENERATOR}"
          -DCMAKE_CXX_COMPILER=${_cxx} -DCMAKE_BUILD_TYPE= -DGCL_INCLUDE_DIR=${SOURCE_DIR}/include
          -DGCL_WITH_TCP=${WITH_TCP}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the header check with ${_cxx} failed (${rc})")
endif()

# Keep going after a failing TU: every failing header is listed, not only the first.
if(GENERATOR MATCHES "Ninja")
  set(_keep_going -k 0)
else()
  set(_keep_going -k)
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${_bin} -j ${JOBS} -- ${_keep_going}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  # Which TUs have no object file: their headers are the failing ones.
  file(GLOB _tus RELATIVE ${_bin}/tu ${_bin}/tu/*.cpp)
  set(_failed)
  if(EXISTS ${_bin}/CMakeFiles/headers_alone.dir)  # GCC
    foreach(tu ${_tus})
      if(NOT tu STREQUAL "all_headers.cpp" AND NOT EXISTS ${_bin}/CMakeFiles/headers_alone.dir/tu/${tu}.o)
        list(APPEND _failed "${tu}")
      endif()
    endforeach()
  elseif(NOT EXISTS ${_bin}/CMakeFiles/headers_all.dir/tu/all_headers.cpp.o)  # clang
    set(_failed "all_headers.cpp (every header at once, -O2: the compiler's errors above name them)")
  endif()
  foreach(level O2 O3)
    if(EXISTS ${_bin}/CMakeFiles/headers_inline_${level}.dir
       AND NOT EXISTS ${_bin}/CMakeFiles/headers_inline_${level}.dir/tu/all_headers.cpp.o)
      list(APPEND _failed "all_headers.cpp (every header at once, -${level} -fkeep-inline-functions)")
    endif()
  endforeach()
  file(READ ${_bin}/instantiated/transports.txt _transports)
  foreach(t ${_transports})
    if(NOT EXISTS ${_bin}/instantiated/${t}.ok)
      list(APPEND _failed "test/headers/instantiate.cpp over ${t} (the templates, instantiated)")
    endif()
  endforeach()
  string(REPLACE ";" "\n  " _failed "${_failed}")
  message(FATAL_ERROR "GCL_HEADERS_FAILED with ${_cxx}: these TUs do not compile warning-free "
                      "(a header's own TU: its path with / and . as _):\n  ${_failed}")
endif()
set(_flags "-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Werror")
file(READ ${_bin}/instantiated/transports.txt _transports)
string(REPLACE ";" ", " _transports "${_transports}")
if(EXISTS ${_bin}/CMakeFiles/headers_all.dir)
  message("GCL_HEADERS_OK: every header compiles with ${_cxx} at -O2, ${_flags} (one TU of them "
          "all; each alone: the GCC check), and so do the collectives, algorithms and operators "
          "instantiated over ${_transports}")
else()
  message("GCL_HEADERS_OK: every header compiles alone with ${_cxx} at -O2, ${_flags}, every "
          "inline function, in one TU, at -O2 and -O3, and the collectives, algorithms and "
          "operators instantiated over ${_transports}")
endif()
