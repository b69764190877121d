# The wire decoders' libFuzzer harnesses as ctest tests (included by test/transport): fuzz.build
# builds them with clang in a sub-build (the main build's compiler is g++, without libFuzzer);
# fuzz.<decoder> runs each for GCL_FUZZ_SECONDS from its seed corpus. Skipped, with the reason,
# when clang or its libFuzzer runtime is missing, and in sanitizer builds (the harnesses bring
# their own sanitizers).
if(NOT GCL_SANITIZE)
  find_program(GCL_FUZZ_CXX NAMES clang++ clang++-14 DOC "clang for the libFuzzer harnesses")
  set(GCL_FUZZ_SECONDS 5 CACHE STRING "How long each fuzz.<decoder> test fuzzes")
  set(_gcl_fuzz_args -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DWORK_DIR=${PROJECT_BINARY_DIR}/test/fuzz
      -DCXX=${GCL_FUZZ_CXX} -DSECONDS=${GCL_FUZZ_SECONDS})
  set(_gcl_fuzz_run ${PROJECT_SOURCE_DIR}/test/fuzz/run.cmake)
  add_test(NAME fuzz.build COMMAND ${CMAKE_COMMAND} -DSTEP=build ${_gcl_fuzz_args} -P ${_gcl_fuzz_run})
  set_tests_properties(fuzz.build PROPERTIES FIXTURES_SETUP gcl_fuzz_built LABELS fuzz TIMEOUT 600
                       SKIP_REGULAR_EXPRESSION "gcl-fuzz: SKIPPED")
  foreach(decoder frame_header hello reply table status)
    add_test(NAME fuzz.${decoder}
             COMMAND ${CMAKE_COMMAND} -DSTEP=${decoder} ${_gcl_fuzz_args} -P ${_gcl_fuzz_run})
    set_tests_properties(fuzz.${decoder} PROPERTIES FIXTURES_REQUIRED gcl_fuzz_built LABELS fuzz
                         TIMEOUT 120 SKIP_REGULAR_EXPRESSION "gcl-fuzz: SKIPPED")
  endforeach()
endif()
