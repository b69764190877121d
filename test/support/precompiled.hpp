// What most test programs parse before their own code, compiled once per build into a
// precompiled header that they share (test/CMakeLists.txt, GCL_PRECOMPILE_TEST_HEADERS):
// Boost.Test, gcl (and the standard library through it) and, where Boost.Asio is, the TCP
// transport. Parsing these was a third of each test program's compile time under the sanitizers
// (clang, AddressSanitizer, -O0: test/collective/reduce.cpp 10.3-11.2 s without, 6.7-7.9 s with;
// test/transport/tcp_collectives.cpp 31.4 s, 23.0 s; the whole build 526 s, 411 s).
//
// Boost.Test's own unit_test.hpp is not here: it defines the program's main and master suite
// (named by the BOOST_TEST_MODULE each program defines before including it), which a header shared
// by every program must not. These are the headers it includes for everything else.
#pragma once

#include <boost/test/framework.hpp>
#include <boost/test/test_tools.hpp>
#include <boost/test/tree/auto_registration.hpp>
#include <boost/test/tree/global_fixture.hpp>
#include <boost/test/tree/test_case_template.hpp>
// Boost.Test's detail/config.hpp turns a BOOST_TEST_MODULE defined before it into BOOST_TEST_MAIN,
// which is what makes unit_test.hpp define main. Here it was included before the program's
// BOOST_TEST_MODULE; every test program is one source file that defines BOOST_TEST_MODULE, so
// each gets its main as before.
#define BOOST_TEST_MAIN

#include <gcl/gcl.hpp>
#include <gcl/transport/shm.hpp>
#if __has_include(<boost/asio.hpp>)
#include <gcl/transport/tcp.hpp>
#endif
