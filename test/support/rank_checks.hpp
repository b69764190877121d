#pragma once
// Assertions made on a rank's thread. Boost.Test's assertion macros are not thread-safe (its
// FAQ says so: they update the framework's counters and checkpoint without a lock), and the
// ranks of gcl::spawn are threads of the test process: three ranks asserting at once once
// corrupted its checkpoint string under AddressSanitizer. These take one lock around the
// assertion. The asserted expression is evaluated under the lock, so it must not communicate
// (a rank holding the lock while it waits for a message would stop the sender's assertions):
// receive first, then assert on what arrived.

#include <boost/test/unit_test.hpp>

#include <mutex>

namespace gcl_test {
inline std::mutex& assertion_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace gcl_test

#define RANK_TEST(...)                                              \
  do {                                                              \
    std::lock_guard rank_test_lock_(::gcl_test::assertion_mutex()); \
    BOOST_TEST(__VA_ARGS__);                                        \
  } while (false)
#define RANK_TEST_REQUIRE(...)                                      \
  do {                                                              \
    std::lock_guard rank_test_lock_(::gcl_test::assertion_mutex()); \
    BOOST_TEST_REQUIRE(__VA_ARGS__);                                \
  } while (false)
#define RANK_CHECK_THROW(statement, exception)                      \
  do {                                                              \
    std::lock_guard rank_test_lock_(::gcl_test::assertion_mutex()); \
    BOOST_CHECK_THROW(statement, exception);                        \
  } while (false)
#define RANK_CHECK_EXCEPTION(statement, exception, predicate)       \
  do {                                                              \
    std::lock_guard rank_test_lock_(::gcl_test::assertion_mutex()); \
    BOOST_CHECK_EXCEPTION(statement, exception, predicate);         \
  } while (false)
