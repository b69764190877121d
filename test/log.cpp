#define BOOST_TEST_MODULE log
#include <boost/test/unit_test.hpp>

// gcl::set_log_handler: every message gcl writes reaches the handler that is set, with its
// level, and the default handler writes it to stderr as a line.

#include <gcl/log.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// What the test's handler received. Handlers are plain functions, so the record is global; a
// mutex because gcl may call the handler from any thread.
std::mutex received_mutex;
std::vector<std::pair<gcl::log_level, std::string>> received;

void record(gcl::log_level level, std::string_view message) {
  std::lock_guard lock(received_mutex);
  received.emplace_back(level, std::string(message));
}

std::vector<std::pair<gcl::log_level, std::string>> take_received() {
  std::lock_guard lock(received_mutex);
  return std::exchange(received, {});
}

// Sets `record` for the scope and puts back what was there.
struct recording {
  gcl::log_handler previous = gcl::set_log_handler(&record);
  recording() { take_received(); }
  ~recording() { gcl::set_log_handler(previous); }
};

// What `f` writes to stderr (file descriptor 2).
template <class F>
std::string capture_stderr(F f) {
  std::string const path = "log_capture_" + std::to_string(::getpid()) + ".log";
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

}  // namespace

BOOST_AUTO_TEST_CASE(a_handler_receives_every_message_and_the_default_comes_back) {
  BOOST_TEST((gcl::get_log_handler() == &gcl::default_log_handler));
  std::string out = capture_stderr([] {
    recording r;
    gcl::detail::log(gcl::log_level::warning, "gcl: rank 3: to the handler");
  });
  BOOST_TEST(out.empty(), out);  // nothing of it on stderr
  // ~recording put the default back: messages go to stderr again, as a line each.
  BOOST_TEST((gcl::get_log_handler() == &gcl::default_log_handler));
  out = capture_stderr([] { gcl::detail::log(gcl::log_level::error, "gcl: to stderr"); });
  BOOST_TEST(out == "gcl: to stderr\n");
  // nullptr restores the default too, and set_log_handler returns what it replaces.
  BOOST_TEST((gcl::set_log_handler(&record) == &gcl::default_log_handler));
  BOOST_TEST((gcl::set_log_handler(nullptr) == &record));
  BOOST_TEST((gcl::get_log_handler() == &gcl::default_log_handler));
}

BOOST_AUTO_TEST_CASE(the_handler_gets_the_level_and_the_text) {
  recording r;
  gcl::detail::log(gcl::log_level::warning, "gcl: one");
  gcl::detail::log(gcl::log_level::debug,
                   gcl::detail::log_text("gcl: %s %.1f [%zu]", "two", 2.5, std::size_t{3}));
  auto got = take_received();
  BOOST_TEST_REQUIRE(got.size() == 2u);
  BOOST_TEST((got[0].first == gcl::log_level::warning));
  BOOST_TEST(got[0].second == "gcl: one");
  BOOST_TEST((got[1].first == gcl::log_level::debug));
  BOOST_TEST(got[1].second == "gcl: two 2.5 [3]");
}

BOOST_AUTO_TEST_CASE(a_throwing_handler_loses_its_message_not_the_caller) {
  auto previous = gcl::set_log_handler(
      [](gcl::log_level, std::string_view) { throw std::runtime_error("handler failed"); });
  BOOST_CHECK_NO_THROW(gcl::detail::log(gcl::log_level::info, "gcl: lost"));
  gcl::set_log_handler(previous);
}
