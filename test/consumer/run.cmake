# Drives the consumer tests from ctest:  cmake -DSTEP=<step> -D... -P run.cmake
#   install        cmake --install BUILD_DIR --prefix PREFIX (a fresh, temporary prefix)
#   package        configure + build + run test/consumer against PREFIX with find_package(gcl)
#   subdirectory   the same consumer with add_subdirectory(SOURCE_DIR)
#   pkg-config     compile test/consumer/main.cpp with `pkg-config --cflags --libs gcl` from PREFIX
#   test_package   configure + build + run test_package/ (the Conan check) against PREFIX
cmake_minimum_required(VERSION 3.25)
foreach(v STEP SOURCE_DIR BUILD_DIR PREFIX WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_command.cmake)

set(_configure_args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)

function(build_and_run name project_dir)
  set(bin ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${bin})
  run(${CMAKE_COMMAND} -S ${project_dir} -B ${bin} ${_configure_args} ${ARGN})
  run(${CMAKE_COMMAND} --build ${bin})
  file(GLOB programs ${bin}/consumer ${bin}/consumer_tcp ${bin}/test_package)
  if(NOT programs)
    message(FATAL_ERROR "no program was built in ${bin}")
  endif()
  foreach(p ${programs})
    run(${p})
  endforeach()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  foreach(f include/gcl/gcl.hpp share/cmake/gcl/gclConfig.cmake share/cmake/gcl/gclConfigVersion.cmake
            share/cmake/gcl/gclTargets.cmake share/pkgconfig/gcl.pc)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "install: ${PREFIX}/${f} is missing")
    endif()
  endforeach()
elseif(STEP STREQUAL "package")
  # Only the install prefix may provide gcl: the source tree is not on any path.
  build_and_run(package ${SOURCE_DIR}/test/consumer -DGCL_CONSUMER_MODE=package
                -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
elseif(STEP STREQUAL "subdirectory")
  build_and_run(subdirectory ${SOURCE_DIR}/test/consumer -DGCL_CONSUMER_MODE=subdirectory
                -DGCL_SOURCE_DIR=${SOURCE_DIR})
elseif(STEP STREQUAL "test_package")
  build_and_run(test_package ${SOURCE_DIR}/test_package -DCMAKE_PREFIX_PATH=${PREFIX}
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
elseif(STEP STREQUAL "pkg-config")
  find_program(PKG_CONFIG pkg-config REQUIRED)
  set(ENV{PKG_CONFIG_PATH} ${PREFIX}/share/pkgconfig)
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs gcl OUTPUT_VARIABLE flags
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs gcl failed with PKG_CONFIG_PATH=${PREFIX}/share/pkgconfig")
  endif()
  message(STATUS "pkg-config --cflags --libs gcl: ${flags}")
  if(NOT flags MATCHES "-std=c\\+\\+20" OR NOT flags MATCHES "-pthread")
    message(FATAL_ERROR "gcl.pc lacks -std=c++20 or -pthread: ${flags}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  file(MAKE_DIRECTORY ${WORK_DIR}/pkg-config)
  run(${CXX} -O2 ${flags} ${SOURCE_DIR}/test/consumer/main.cpp -o ${WORK_DIR}/pkg-config/consumer ${flags})
  run(${WORK_DIR}/pkg-config/consumer)
else()
  message(FATAL_ERROR "run.cmake: unknown STEP '${STEP}'")
endif()
