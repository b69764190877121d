#pragma once
// error_of(f): the what() of the exception `f` throws, or a text saying it threw none, for
// tests that check what a message names.

#include <exception>
#include <string>
#include <utility>

namespace gcl_test {

template <class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (std::exception const& e) {
    return e.what();
  }
  return "(no exception thrown)";
}

}  // namespace gcl_test
