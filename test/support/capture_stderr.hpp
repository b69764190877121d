#pragma once
// capture_stderr(f): what `f` writes to stderr (file descriptor 2, so C stdio and anything
// else writing there), for tests of messages gcl prints. Include after <boost/test/unit_test.hpp>.

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gcl_test {

template <class F>
std::string capture_stderr(F f) {
  std::string const path = "stderr_capture_" + std::to_string(::getpid()) + ".log";
  std::fflush(stderr);
  int const saved = ::dup(2);
  BOOST_REQUIRE(std::freopen(path.c_str(), "w", stderr) != nullptr);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

}  // namespace gcl_test
