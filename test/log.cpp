#define BOOST_TEST_MODULE log
#include <boost/test/unit_test.hpp>

// gcl::set_log_handler: every message gcl writes reaches the handler that is set, with its
// level, and the default handler writes it to stderr as a line.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/log.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#ifdef GCL_TEST_TCP
#include <gcl/communicator.hpp>
#include <gcl/transport/tcp.hpp>

#include <boost/asio.hpp>
#include <chrono>
#include <thread>
#endif

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/capture_stderr.hpp"
#include "support/log_recording.hpp"

namespace {

using recording = gcl_test::log_recording;

using gcl_test::capture_stderr;

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
  BOOST_TEST((gcl::set_log_handler(&recording::record) == &gcl::default_log_handler));
  BOOST_TEST((gcl::set_log_handler(nullptr) == &recording::record));
  BOOST_TEST((gcl::get_log_handler() == &gcl::default_log_handler));
}

BOOST_AUTO_TEST_CASE(the_handler_gets_the_level_and_the_text) {
  recording r;
  gcl::detail::log(gcl::log_level::warning, "gcl: one");
  gcl::detail::log(gcl::log_level::debug,
                   gcl::detail::log_text("gcl: %s %.1f [%zu]", "two", 2.5, std::size_t{3}));
  auto got = recording::take();
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

// automatic's GCL_DEBUG report: at level debug, to the handler, and nothing on stderr; then, the
// default back, to stderr. GCL_DEBUG is read once per process, at the first decision, which no
// earlier test case makes.
BOOST_AUTO_TEST_CASE(automatics_gcl_debug_report_reaches_the_handler) {
  ::setenv("GCL_DEBUG", "1", 1);
  auto decide = [](std::size_t n) {
    gcl::spawn<gcl::inproc_transport>(2, [n](auto& comm) {
      std::vector<std::int64_t> v(n, comm.rank());
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.trials = 0});
    });
  };
  std::vector<recording::entry> got;
  std::string out = capture_stderr([&] {
    recording r;
    decide(1000);  // 8000 bytes: the size class [4096, 8192)
    got = recording::take();
  });
  BOOST_TEST(out.empty(), out);
  BOOST_TEST_REQUIRE(got.size() == 1u);  // once per size class, not once per rank
  BOOST_TEST((got[0].first == gcl::log_level::debug));
  BOOST_TEST(got[0].second.starts_with("gcl: automatic: P=2 bytes=[4096,8192) -> "), got[0].second);
  BOOST_TEST(got[0].second.find('\n') == std::string::npos);  // the handler adds no newline
  // The default handler again: the next decision (another size class) is a line on stderr.
  out = capture_stderr([&] { decide(3); });
  BOOST_TEST(out.starts_with("gcl: automatic: P=2 bytes=[16,32) -> "), out);
  BOOST_TEST(out.ends_with(")\n"), out);
  BOOST_TEST(recording::take().empty());
}

#ifdef GCL_TEST_TCP
// A stranger on rank 0's port is refused with a warning, which reaches the handler (and not
// stderr) with the rank, the stranger's address, the port and the reason.
BOOST_AUTO_TEST_CASE(a_refused_stranger_is_a_warning_to_the_handler) {
  using namespace std::chrono_literals;
  auto refusals = [] { return recording::containing("refused a connection"); };
  std::uint16_t port = 0;
  std::string const out = capture_stderr([&] {
    recording r;
    gcl::tcp_options o;
    o.timeout = 20s;
    gcl::tcp_transport::group g(2, o);
    port = g.options().master_port;
    std::vector<std::jthread> ranks;
    for (int rank = 0; rank < 2; ++rank)
      ranks.emplace_back([&, rank] {
        gcl::communicator comm(g.connect(rank));
        // Rank 0's transport (and its accept loop) stays until the refusal has been logged.
        for (auto until = std::chrono::steady_clock::now() + 15s;
             rank == 0 && refusals().empty() && std::chrono::steady_clock::now() < until;)
          std::this_thread::sleep_for(5ms);
      });
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    boost::system::error_code ec;
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
    BOOST_REQUIRE_MESSAGE(!ec, ec.message());
    boost::asio::write(s, boost::asio::buffer(std::string_view("garbage\n")), ec);
    s.close(ec);
    ranks.clear();  // joins
  });
  auto const got = refusals();
  BOOST_TEST_REQUIRE(got.size() == 1u);
  BOOST_TEST((got[0].first == gcl::log_level::warning));
  BOOST_TEST(got[0].second.starts_with("gcl: rank 0: refused a connection from 127.0.0.1:"),
             got[0].second);
  BOOST_TEST(got[0].second.ends_with(" on port " + std::to_string(port) +
                                     ": sent 8 bytes that are not a gcl hello, then closed"),
             got[0].second);
  BOOST_TEST(out.find("refused") == std::string::npos, out);
}
#endif
