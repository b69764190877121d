// detail::status_lock, the lock of inproc_transport's per-rank record of collectives: it
// excludes (a count kept without atomics comes out exact, and ThreadSanitizer sees the
// hand-over), and try_lock fails while it is held.
#define BOOST_TEST_MODULE status_lock
#include <boost/test/unit_test.hpp>

#include <gcl/detail/status_lock.hpp>

#include <mutex>
#include <thread>
#include <vector>

using gcl::detail::status_lock;

BOOST_AUTO_TEST_CASE(holders_exclude_one_another) {
  status_lock lock;
  long count = 0;  // not atomic: only the lock keeps the increments apart
  constexpr int threads = 4, rounds = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard guard(lock);
        long const seen = count;
        if (i % 64 == 0) std::this_thread::yield();  // a holder that loses its core
        count = seen + 1;
      }
    });
  for (auto& w : workers) w.join();
  BOOST_TEST(count == long{threads} * rounds);
}

BOOST_AUTO_TEST_CASE(try_lock_fails_while_held) {
  status_lock lock;
  BOOST_TEST(lock.try_lock());
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  BOOST_TEST(!other);
  lock.unlock();
  std::thread([&] { other = lock.try_lock(); }).join();
  BOOST_TEST(other);
  lock.unlock();
}
