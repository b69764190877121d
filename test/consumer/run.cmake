# Drives the consumer tests from ctest:  cmake -DSTEP=<step> -D... -P run.cmake
#   install        cmake --install BUILD_DIR --prefix PREFIX (a fresh, temporary prefix)
#   package        configure + build + run test/consumer against PREFIX with find_package(gcl)
#   subdirectory   the same consumer with add_subdirectory(SOURCE_DIR)
#   pkg-config     compile test/consumer/main.cpp with `pkg-config --cflags --libs gcl` from PREFIX
#   test_package   configure + build + run test_package/ (the Conan check) against PREFIX: its
#                  core program, and its tcp program if WITH_TCP
#   headers_only   the README's install on a machine with a compiler, CMake and Boost's headers
#                  only: configuring gcl with its tests on must stop with a message naming
#                  -DGCL_BUILD_TESTS=OFF when Boost.Test is absent; configured that way (and no
#                  CLI11, nlohmann-json, xtensor, BLAS, MPI either), gcl installs, and
#                  test_package builds and runs against that install with both components
#   core_only      the same without Boost at all: gcl installs without gcl::tcp, and
#                  test_package's core program builds and runs against it without Boost
# Absent packages are simulated with CMAKE_DISABLE_FIND_PACKAGE_<name>, which also makes a
# REQUIRED find_package of that name an error.
cmake_minimum_required(VERSION 3.25)
foreach(v STEP SOURCE_DIR BUILD_DIR PREFIX WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run.cmake: -D${v}=... is required")
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_command.cmake)

# No build type, so no optimizer (-O0): these tests check that a project finds gcl, compiles
# against it and links, which the optimizer has no part in (headers.gcc compiles every header at
# -O2 and -O3). Their builds are on ctest's longest chain (RESOURCE_LOCK gcl_consumer_build):
# the seven tests took 101 s in Release (-O3, one program at a time), 61 s like this.
set(_configure_args -G "${GENERATOR}" -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=)

if(NOT DEFINED WITH_TCP)
  set(WITH_TCP OFF)
endif()

function(build_and_run name project_dir)
  set(bin ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${bin})
  run(${CMAKE_COMMAND} -S ${project_dir} -B ${bin} ${_configure_args} ${ARGN})
  # A consumer's programs (up to two) at once: the lock keeps other sub-builds away.
  run(${CMAKE_COMMAND} --build ${bin} --parallel 2)
  file(GLOB programs ${bin}/consumer ${bin}/consumer_tcp ${bin}/test_package ${bin}/test_package_tcp)
  if(NOT programs)
    message(FATAL_ERROR "no program was built in ${bin}")
  endif()
  foreach(p ${programs})
    run(${p})
  endforeach()
endfunction()

# expect_files(PREFIX [PRESENT files...] [ABSENT files...])
function(expect_files prefix)
  cmake_parse_arguments(E "" "" "PRESENT;ABSENT" ${ARGN})
  foreach(f ${E_PRESENT})
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "install: ${prefix}/${f} is missing")
    endif()
  endforeach()
  foreach(f ${E_ABSENT})
    if(EXISTS ${prefix}/${f})
      message(FATAL_ERROR "install: ${prefix}/${f} should not be there")
    endif()
  endforeach()
endfunction()

set(_installed_files include/gcl/gcl.hpp include/gcl/transport/tcp.hpp share/doc/gcl/LICENSE
    share/cmake/gcl/gclConfig.cmake share/cmake/gcl/gclConfigVersion.cmake
    share/cmake/gcl/gclTargets.cmake share/pkgconfig/gcl.pc)

# install_bare(NAME CMAKE_ARGS...): configures gcl's source tree the README's way
# (-DGCL_BUILD_TESTS=OFF) as on a machine without Boost.Test, CLI11, nlohmann-json, xtensor,
# BLAS or MPI (plus CMAKE_ARGS), and installs it to WORK_DIR/NAME/prefix.
function(install_bare name)
  set(dir ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${dir})
  set(absent)
  foreach(p boost_unit_test_framework CLI11 nlohmann_json xtensor xtensor-blas BLAS MPI)
    list(APPEND absent -DCMAKE_DISABLE_FIND_PACKAGE_${p}=ON)
  endforeach()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${dir}/build ${_configure_args} -Wno-dev
      -DGCL_BUILD_TESTS=OFF ${absent} ${ARGN})
  run(${CMAKE_COMMAND} --install ${dir}/build --prefix ${dir}/prefix)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
  expect_files(${PREFIX} PRESENT ${_installed_files})
elseif(STEP STREQUAL "headers_only")
  # With the tests on (the default of a top-level build) and no Boost.Test: a message that says
  # what to do, not an error from inside Boost's config files.
  set(dir ${WORK_DIR}/headers_only/tests_on)
  file(REMOVE_RECURSE ${dir})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${dir} ${_configure_args}
                          -DGCL_BUILD_EXAMPLES=OFF -DGCL_BUILD_BENCHMARKS=OFF -DGCL_BUILD_TRAINER=OFF
                          -DCMAKE_DISABLE_FIND_PACKAGE_boost_unit_test_framework=ON
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT "${err}" MATCHES "Boost.Test.*-DGCL_BUILD_TESTS=OFF")
    message(FATAL_ERROR "configuring with tests on and no Boost.Test: expected a failure naming "
                        "-DGCL_BUILD_TESTS=OFF, got exit ${rc}:\n${err}")
  endif()
  message(STATUS "tests on, no Boost.Test: configure stops, saying what to do (as expected)")
  install_bare(headers_only)
  if(WITH_TCP)
    expect_files(${WORK_DIR}/headers_only/prefix PRESENT ${_installed_files} share/pkgconfig/gcl-tcp.pc)
  else()
    expect_files(${WORK_DIR}/headers_only/prefix PRESENT ${_installed_files})
  endif()
  build_and_run(headers_only/test_package ${SOURCE_DIR}/test_package
                -DCMAKE_PREFIX_PATH=${WORK_DIR}/headers_only/prefix
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DGCL_TEST_TCP=${WITH_TCP})
elseif(STEP STREQUAL "core_only")
  install_bare(core_only -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON)
  expect_files(${WORK_DIR}/core_only/prefix PRESENT ${_installed_files}
               ABSENT share/pkgconfig/gcl-tcp.pc)
  # The consumer has no Boost either: find_package(gcl) must not look for it.
  build_and_run(core_only/test_package ${SOURCE_DIR}/test_package
                -DCMAKE_PREFIX_PATH=${WORK_DIR}/core_only/prefix -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON -DGCL_TEST_TCP=OFF)
  if(EXISTS ${WORK_DIR}/core_only/test_package/test_package_tcp)
    message(FATAL_ERROR "core_only: test_package_tcp was built without gcl::tcp")
  endif()
elseif(STEP STREQUAL "package")
  # Only the install prefix may provide gcl: the source tree is not on any path.
  build_and_run(package ${SOURCE_DIR}/test/consumer -DGCL_CONSUMER_MODE=package
                -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
elseif(STEP STREQUAL "subdirectory")
  build_and_run(subdirectory ${SOURCE_DIR}/test/consumer -DGCL_CONSUMER_MODE=subdirectory
                -DGCL_SOURCE_DIR=${SOURCE_DIR})
elseif(STEP STREQUAL "test_package")
  build_and_run(test_package ${SOURCE_DIR}/test_package -DCMAKE_PREFIX_PATH=${PREFIX}
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DGCL_TEST_TCP=${WITH_TCP})
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
  run(${CXX} ${flags} ${SOURCE_DIR}/test/consumer/main.cpp -o ${WORK_DIR}/pkg-config/consumer ${flags})
  run(${WORK_DIR}/pkg-config/consumer)
else()
  message(FATAL_ERROR "run.cmake: unknown STEP '${STEP}'")
endif()
