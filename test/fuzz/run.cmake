# Drives the fuzz tests from ctest:  cmake -DSTEP=<step> -D... -P run.cmake
#   build          configure and build this directory's harnesses with clang (CXX) in WORK_DIR
#   <decoder>      run fuzz_<decoder> for SECONDS seconds from the seed corpus corpus/<decoder>
# Without clang, or without libFuzzer's runtime, every step prints "gcl-fuzz: SKIPPED: why" and
# succeeds; ctest shows the test as skipped (SKIP_REGULAR_EXPRESSION).
cmake_minimum_required(VERSION 3.25)
foreach(v STEP SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()
set(_fuzz_dir ${SOURCE_DIR}/test/fuzz)
set(_skip_file ${WORK_DIR}/skipped.txt)

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_command.cmake)

function(skip why)
  file(WRITE ${_skip_file} "${why}")
  message("gcl-fuzz: SKIPPED: ${why}")
endfunction()

if(STEP STREQUAL "build")
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
  if(NOT CXX OR NOT EXISTS "${CXX}")
    skip("clang++ was not found when gcl was configured (Debian: apt-get install clang libclang-rt-14-dev, then reconfigure)")
    return()
  endif()
  execute_process(COMMAND ${CXX} -fsanitize=fuzzer,address,undefined ${_fuzz_dir}/probe.cpp
                          -o ${WORK_DIR}/probe
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    skip("${CXX} cannot link a libFuzzer program with AddressSanitizer and UBSan (Debian: apt-get install libclang-rt-14-dev): ${out}")
    return()
  endif()
  run(${CMAKE_COMMAND} -S ${_fuzz_dir} -B ${WORK_DIR}/build -DCMAKE_CXX_COMPILER=${CXX}
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCL_SOURCE_DIR=${SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build -j 2)
else()
  if(EXISTS ${_skip_file})
    file(READ ${_skip_file} why)
    message("gcl-fuzz: SKIPPED: ${why}")
    return()
  endif()
  set(program ${WORK_DIR}/build/fuzz_${STEP})
  set(seeds ${_fuzz_dir}/corpus/${STEP})
  if(NOT EXISTS ${program})
    message(FATAL_ERROR "${program} was not built (did the fuzz.build test run and pass?)")
  endif()
  if(NOT IS_DIRECTORY ${seeds})
    message(FATAL_ERROR "no seed corpus at ${seeds}")
  endif()
  if(NOT SECONDS)
    set(SECONDS 5)
  endif()
  # New inputs go to a scratch directory listed first (libFuzzer writes there), never into the
  # checked-in seeds; a crashing input is saved as WORK_DIR/<decoder>-crash-<sha1>.
  set(found ${WORK_DIR}/found-${STEP})
  file(REMOVE_RECURSE ${found})
  file(MAKE_DIRECTORY ${found})
  run(${program} -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix=${WORK_DIR}/${STEP}- ${found} ${seeds})
endif()
