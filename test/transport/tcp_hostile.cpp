#define BOOST_TEST_MODULE transport_tcp_hostile
#include <boost/test/unit_test.hpp>

// tcp_transport against peers that pass the handshake and then lie: a rank 0 whose reply runs
// on without a NUL or carries a bad address table, a rank whose frame headers claim 2^40
// bytes or break their call's limits. The test plays that peer by hand (fake_rank, fake rank 0)
// and checks what the real rank reports, and that it allocates no more than what arrived.
// Also the rendezvous' messages: what a rank says it waits for, and what the ranks that joined
// hear when rank 0 gives up.

#include "../support/heap_in_use.hpp"

#include <gcl/communicator.hpp>
#include <gcl/transport/tcp.hpp>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using gcl::tcp_transport;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace wire = gcl::detail;
using asio::ip::tcp;

namespace {

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

std::string code_and_text(std::optional<gcl::transport_error> const& e) {
  if (!e) return "no error";
  return e->code().message() + "|" + e->what();
}

// One asynchronous operation on `s`, bounded: a test that talks to a rank by hand fails,
// instead of hanging, when the rank does not do its part.
struct io_result {
  boost::system::error_code ec;
  std::size_t n = 0;
};
template <class Start>
io_result bounded(asio::io_context& io, tcp::socket& s, std::chrono::milliseconds limit,
                  Start start) {
  io_result r;
  bool done = false;
  start([&](boost::system::error_code ec, std::size_t n) {
    r = {ec, n};
    done = true;
  });
  io.restart();
  io.run_for(limit);
  if (!done) {
    boost::system::error_code ignored;
    s.cancel(ignored);
    io.restart();
    io.run();
    r.ec = asio::error::timed_out;
  }
  return r;
}
io_result read_for(asio::io_context& io, tcp::socket& s, std::span<std::byte> into,
                   std::chrono::milliseconds limit) {
  return bounded(io, s, limit, [&](auto handler) {
    asio::async_read(s, asio::buffer(into.data(), into.size()), handler);
  });
}
io_result write_for(asio::io_context& io, tcp::socket& s, std::span<std::byte const> out,
                    std::chrono::milliseconds limit) {
  return bounded(io, s, limit, [&](auto handler) {
    asio::async_write(s, asio::buffer(out.data(), out.size()), handler);
  });
}

// A rank of a job played by hand: joins rank 0 with a correct hello (so it passes the
// handshake and becomes rank 0's peer), then sends whatever a test wants. Used from the test's
// main thread only.
struct fake_rank {
  asio::io_context io;
  tcp::acceptor listener{io, {asio::ip::make_address("127.0.0.1"), 0}};  // its advertised port
  tcp::socket socket{io};

  void join(gcl::tcp_options const& o, int rank) {
    socket.connect({asio::ip::make_address("127.0.0.1"), o.master_port});
    wire::hello h;
    h.rank = rank;
    h.size = o.size;
    h.token = wire::token_hash(o.token);
    h.port = listener.local_endpoint().port();
    // The hello, and the CPUs that follow a join hello (none known).
    std::array<std::byte, wire::hello_size + wire::hello_cpus_size> hello{};
    h.encode(hello.data());
    BOOST_REQUIRE(!write_for(io, socket, hello, 30s).ec);
    std::vector<std::byte> answer(wire::reply_size + wire::table_entry_size * o.size);
    auto got = read_for(io, socket, answer, 30s);
    BOOST_REQUIRE_MESSAGE(!got.ec, "rank 0 did not answer the fake rank: " + got.ec.message());
    auto reply = wire::decode_reply(answer);
    BOOST_REQUIRE(reply && reply.value.status == 0);
  }

  void send(wire::frame_header const& h, std::span<std::byte const> payload = {}) {
    std::array<std::byte, wire::frame_header_size> b{};
    h.encode(b.data());
    BOOST_REQUIRE(!write_for(io, socket, b, 30s).ec);
    if (!payload.empty()) BOOST_REQUIRE(!write_for(io, socket, payload, 60s).ec);
  }

  // The next frame from rank 0 (header and payload), if one comes within `limit`.
  std::optional<std::pair<wire::frame_header, std::string>> next_frame(
      std::chrono::milliseconds limit) {
    std::array<std::byte, wire::frame_header_size> b{};
    if (read_for(io, socket, b, limit).ec) return std::nullopt;
    auto h = wire::decode_frame_header(b);
    BOOST_REQUIRE_MESSAGE(bool(h), h.error);
    BOOST_REQUIRE(h.value.length < (1u << 20));
    std::string payload(h.value.length, '\0');
    if (read_for(io, socket, std::as_writable_bytes(std::span(payload)), limit).ec)
      return std::nullopt;
    return std::pair{h.value, payload};
  }

  // Whether rank 0 has closed this connection (reads end with an error, not a timeout).
  bool closed_by_peer(std::chrono::milliseconds limit) {
    std::array<std::byte, 4096> b{};
    for (;;) {
      auto r = bounded(io, socket, limit,
                       [&](auto handler) { socket.async_read_some(asio::buffer(b), handler); });
      if (r.ec == asio::error::timed_out) return false;
      if (r.ec) return true;
    }
  }
};

wire::frame_header header_from_rank_1(std::uint32_t tag, std::uint64_t length) {
  wire::frame_header h;
  h.source = 1;
  h.tag = tag;
  h.length = length;
  return h;
}

gcl::tcp_options options(std::chrono::milliseconds timeout) {
  gcl::tcp_options o;
  o.timeout = timeout;
  o.token = "hostile";
  return o;
}

// A job of 2: rank 0 real, on a thread that then waits in recv(1, tag 5, 8 bytes); rank 1
// fake. `act(fake, receiving)` plays rank 1 once it has joined. Returns rank 0's error.
template <class Act>
std::optional<gcl::transport_error> rank_0_with_fake_rank_1(std::chrono::milliseconds timeout,
                                                            Act act) {
  tcp_transport::group g(2, options(timeout));
  std::optional<gcl::transport_error> error;
  std::atomic<bool> receiving{false};
  fake_rank fake;
  {
    std::jthread rank0([&] {
      try {
        auto t = g.connect(0);
        std::array<std::byte, 8> in{};
        receiving = true;  // (a moment before the receive is posted)
        t.recv(1, gcl::tag{5}, in);
      } catch (gcl::transport_error const& e) {
        error = e;
      }
    });
    fake.join(g.options(), 1);
    act(fake, receiving);
  }
  return error;
}

using gcl_test::heap_in_use;
using gcl_test::malloc_is_glibc;

constexpr std::uint64_t two_to_the_40 = std::uint64_t{1} << 40;

}  // namespace

// ---- the reply to a hello, from a rank 0 played by hand ----

namespace {

// Rank 1 of a job of 2 whose rank 0 reads the hello and answers `answer`, then closes.
std::optional<gcl::transport_error> rank_1_hears(std::vector<std::byte> const& answer,
                                                 std::uint16_t& port) {
  asio::io_context io;
  tcp::acceptor rank0(io, {asio::ip::make_address("127.0.0.1"), 0});
  port = rank0.local_endpoint().port();
  auto o = options(20s);
  o.rank = 1;
  o.size = 2;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  std::optional<gcl::transport_error> error;
  std::jthread rank1([&] {
    try {
      tcp_transport t(o);
    } catch (gcl::transport_error const& e) {
      error = e;
    }
  });
  tcp::socket s(io);
  bool accepted = false;
  rank0.async_accept(s, [&](boost::system::error_code ec) { accepted = !ec; });
  io.run_for(20s);
  BOOST_REQUIRE(accepted);
  // The hello and the CPUs that follow it, all read before the answer (a close with bytes
  // unread would reset the connection, and rank 1 might never read the answer).
  std::array<std::byte, wire::hello_size + wire::hello_cpus_size> hello{};
  BOOST_REQUIRE(!read_for(io, s, hello, 20s).ec);
  auto h = wire::decode_hello(hello);
  BOOST_REQUIRE(h && h.value.rank == 1);
  write_for(io, s, answer, 20s);
  s.close();
  rank1.join();  // it fails on the answer: it does not wait for its timeout
  return error;
}

std::vector<std::byte> reply(std::uint32_t status, std::string const& text) {
  auto const r = wire::encode_reply(status, text);
  return std::vector<std::byte>(r.begin(), r.end());
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_refusal_without_nul_is_a_protocol_error_not_a_read_past_the_buffer) {
  // What a fuzzer found: magic, a non-zero status, then 168 non-zero bytes (the reply's text
  // field and the rest of the buffer rank 1 reads, reply + table). The text used to be read as
  // a C string, past the buffer.
  std::vector<std::byte> long_refusal(wire::reply_size + 2 * wire::table_entry_size,
                                      std::byte{'A'});
  wire::put(long_refusal.data(), wire::reply_magic);
  wire::put(long_refusal.data() + 4, std::uint32_t{5});
  std::uint16_t port = 0;
  auto e = rank_1_hears(long_refusal, port);
  BOOST_REQUIRE_MESSAGE(e, "rank 1 accepted a refusal");
  BOOST_TEST((e->code() == gcl::errc::protocol), code_and_text(e));
  BOOST_TEST(contains(e->what(), "rank 0 at 127.0.0.1:" + std::to_string(port) +
                                     " did not answer as a gcl rank: reply text is not "
                                     "NUL-terminated within its 120 bytes"),
             e->what());
  BOOST_TEST(!contains(e->what(), "AAAA"), e->what());
}

BOOST_AUTO_TEST_CASE(a_reply_is_checked_before_it_is_believed) {
  struct case_t {
    std::vector<std::byte> answer;
    gcl::errc code;
    std::string text;
  };
  std::vector<case_t> cases;
  // The longest text a reply holds is shown whole, with the errc it carries.
  cases.push_back({reply(3, std::string(119, 'B')), gcl::errc::timeout,
                   "refused the connection: " + std::string(119, 'B')});
  cases.push_back({reply(99, "who knows"), gcl::errc::protocol,
                   "did not answer as a gcl rank: reply status 99 is not a gcl error code"});
  cases.push_back({reply(0, "") /* then closes: no table */, gcl::errc::peer_closed,
                   "accepted the connection, then closed it before sending the address table"});
  auto short_reply = reply(0, "");
  short_reply.resize(17);
  cases.push_back(
      {short_reply, gcl::errc::protocol,
       "did not answer as a gcl rank: a reply is 128 bytes, got 17 (then: End of file)"});
  // An accepted reply whose table gives rank 1 address family 9.
  auto bad_table = reply(0, "");
  std::vector<wire::table_entry> entries(2);
  entries[1] = {9, 41000, {127, 0, 0, 1}};
  bad_table.resize(wire::reply_size + 2 * wire::table_entry_size);
  wire::encode_table(bad_table.data() + wire::reply_size, entries);
  cases.push_back({bad_table, gcl::errc::protocol,
                   "sent a bad address table: the address table gives rank 1 address family 9 "
                   "(neither 4 nor 6)"});
  for (auto const& c : cases) {
    std::uint16_t port = 0;
    auto e = rank_1_hears(c.answer, port);
    BOOST_REQUIRE_MESSAGE(e, "rank 1 accepted a bad answer: " + c.text);
    BOOST_TEST((e->code() == c.code), code_and_text(e));
    BOOST_TEST(contains(e->what(), "gcl: rank 1: rank 0 at 127.0.0.1:" + std::to_string(port)),
               e->what());
    BOOST_TEST(contains(e->what(), c.text), e->what());
  }
}

// ---- frame headers that lie, from a rank 1 played by hand ----

BOOST_AUTO_TEST_CASE(a_header_claiming_2_to_the_40_bytes_for_the_posted_receive_is_a_mismatch) {
  // The receive must be posted before the header arrives. Nothing outside rank 0 can see
  // when it is, so the fake waits a moment after rank 0 is about to receive; if the header
  // still came first (a loaded machine), it is queued step by step, no error comes, and the
  // case is tried again with a longer wait.
  for (auto delay : {50ms, 500ms, 3000ms}) {
    std::optional<std::pair<wire::frame_header, std::string>> told;
    auto e = rank_0_with_fake_rank_1(20s, [&](fake_rank& fake, std::atomic<bool>& receiving) {
      for (int i = 0; i < 30000 && !receiving; ++i) std::this_thread::sleep_for(1ms);
      std::this_thread::sleep_for(delay);
      fake.send(header_from_rank_1(5, two_to_the_40));
      told = fake.next_frame(5s);  // rank 0 tells its peers why it failed
      fake.socket.close();
    });
    if (!told) {
      BOOST_TEST_MESSAGE("the header overtook the receive after " << delay.count() << " ms; again");
      continue;
    }
    BOOST_TEST((e && e->code() == gcl::errc::mismatch), code_and_text(e));
    BOOST_TEST(contains(code_and_text(e),
                        "gcl: rank 0: expected 8 bytes for send/recv from rank 1 at 127.0.0.1:"),
               code_and_text(e));
    BOOST_TEST(
        contains(code_and_text(e), "(tag 5), but rank 1 sent 1099511627776 bytes for send/recv"),
        code_and_text(e));
    BOOST_TEST((told->first.type == wire::frame_type::abort));
    BOOST_TEST(told->first.tag == static_cast<std::uint32_t>(gcl::errc::mismatch));
    BOOST_TEST(contains(told->second, "rank 1 sent 1099511627776 bytes"), told->second);
    return;
  }
  BOOST_FAIL("rank 0 never reported the frame for its posted receive as a mismatch");
}

BOOST_AUTO_TEST_CASE(a_receive_that_times_out_on_a_half_read_frame_says_so) {
  // Rank 1 (played by hand) sends the header of the 8-byte frame rank 0 waits for and 3 bytes of
  // its payload, then nothing. Rank 0's timeout says a frame from rank 1 is half-read: whether
  // it went to the receive or to the queue (the header may come first), the wait ended with a
  // frame on its way in, not with nothing sent.
  auto e = rank_0_with_fake_rank_1(500ms, [&](fake_rank& fake, std::atomic<bool>&) {
    std::array<std::byte, 3> some{};
    fake.send(header_from_rank_1(5, 8), some);
    // Stays connected until rank 0 gives up (its status query comes first, then its abort).
    for (int i = 0; i < 4; ++i)
      if (auto f = fake.next_frame(5s); !f || f->first.type == wire::frame_type::abort) break;
    fake.socket.close();
  });
  BOOST_TEST((e && e->code() == gcl::errc::timeout), code_and_text(e));
  BOOST_TEST(contains(code_and_text(e), "From rank 1: a frame half-read"), code_and_text(e));
}

BOOST_AUTO_TEST_CASE(a_late_answer_to_an_earlier_status_query_is_not_taken_for_the_last) {
  // Rank 0 times out in its receive and asks rank 1 (played by hand) where it is. Rank 1
  // answers "waiting in all_reduce #1", once echoing the query's number and once the number
  // before it, as a late answer to an earlier query would. Only the first may be reported:
  // the second must read as no answer (a rank that stopped after its last answer looks so).
  // Rank 0 gives the answers a second of its I/O thread's running time (answer_window, the
  // timeout if shorter): ample for rank 1's, even on a loaded machine.
  for (bool echoes : {true, false}) {
    auto e = rank_0_with_fake_rank_1(1s, [&](fake_rank& fake, std::atomic<bool>&) {
      for (int i = 0; i < 4; ++i) {
        auto f = fake.next_frame(10s);
        if (!f || f->first.type == wire::frame_type::abort) break;
        if (f->first.type != wire::frame_type::status_query) continue;
        BOOST_TEST(f->first.query != 0);
        auto status = header_from_rank_1(wire::encode_status_tag({true, 0}), 0);
        status.type = wire::frame_type::status_reply;
        status.query = echoes ? f->first.query : static_cast<std::uint8_t>(f->first.query - 1);
        status.call = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 1, -1, "sum", "ring");
        status.call.sequence = 1;
        fake.send(status);
      }
      fake.socket.close();
    });
    BOOST_TEST((e && e->code() == gcl::errc::timeout), code_and_text(e));
    BOOST_TEST(contains(code_and_text(e), "rank 1 is waiting in it") == echoes, code_and_text(e));
  }
}

BOOST_AUTO_TEST_CASE(frames_that_break_their_own_limits_are_protocol_errors_naming_the_peer) {
  struct case_t {
    wire::frame_header header;
    std::string problem;
  };
  std::vector<case_t> cases;
  auto collective = header_from_rank_1(0x80000000u, two_to_the_40);
  collective.call = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 10, -1, "sum", "ring");
  collective.call.sequence = 1;
  cases.push_back({collective,
                   "a frame of 1099511627776 bytes for all_reduce #1 (ring, sum, 10 x float32), "
                   "more than the 65536 bytes its call allows"});
  auto abort_frame =
      header_from_rank_1(static_cast<std::uint32_t>(gcl::errc::aborted), two_to_the_40);
  abort_frame.type = wire::frame_type::abort;
  cases.push_back({abort_frame, "an abort frame of 1099511627776 bytes (at most 65536"});
  abort_frame.length = 1 << 20;
  cases.push_back({abort_frame, "an abort frame of 1048576 bytes (at most 65536"});
  auto bye = header_from_rank_1(0, 5);
  bye.type = wire::frame_type::bye;
  cases.push_back({bye, "a bye frame that claims a payload of 5 bytes"});
  auto query = header_from_rank_1(0, two_to_the_40);
  query.type = wire::frame_type::status_query;
  cases.push_back({query, "a status query that claims a payload of 1099511627776 bytes"});
  auto status = header_from_rank_1(wire::encode_status_tag({true, 9}), 0);
  status.type = wire::frame_type::status_reply;
  cases.push_back({status, "a status reply that says its rank waits for rank 9 (the job has 2"});
  auto impostor = header_from_rank_1(5, 8);
  impostor.source = 7;
  cases.push_back({impostor, "a frame that claims to come from rank 7"});
  auto not_gcl = header_from_rank_1(5, 8);
  not_gcl.magic = 0x12345678;
  cases.push_back({not_gcl, "wrong frame magic 0x12345678"});

  for (auto const& c : cases) {
    bool closed = false;
    auto e = rank_0_with_fake_rank_1(20s, [&](fake_rank& fake, std::atomic<bool>&) {
      fake.send(c.header);
      closed = fake.closed_by_peer(20s);
    });
    BOOST_TEST((e && e->code() == gcl::errc::protocol), code_and_text(e));
    BOOST_TEST(contains(code_and_text(e),
                        "gcl: rank 0: protocol error on the connection with rank 1 at 127.0.0.1:"),
               code_and_text(e));
    BOOST_TEST(contains(code_and_text(e), c.problem), code_and_text(e));
    BOOST_TEST(closed,
               "rank 0 kept the connection of a peer that broke the protocol: " + c.problem);
  }
}

BOOST_AUTO_TEST_CASE(a_lying_send_recv_header_costs_memory_only_as_its_bytes_arrive) {
  // A send/recv frame on a tag nobody receives, claiming 8 GiB; 100 MiB of it arrive. Rank 0
  // holds 128 MiB for it (two receive steps), not 8 GiB; when the liar leaves, rank 0 reports
  // the lost peer.
  constexpr std::size_t sent = std::size_t{100} << 20, step = wire::receive_step;
  std::vector<std::byte> payload(sent, std::byte{0x5a});
  std::size_t before = 0, during = 0;
  // Rank 0's timeout is far beyond the waits below: only the liar's leaving may end its recv.
  auto e = rank_0_with_fake_rank_1(180s, [&](fake_rank& fake, std::atomic<bool>&) {
    before = heap_in_use();
    fake.send(header_from_rank_1(9, std::uint64_t{8} << 30), payload);
    // Wait (bounded, well within rank 0's timeout) until rank 0 has taken its second step,
    // then look at what it holds. Under a sanitizer's allocator mallinfo2 never grows: the
    // blocking send above is then all there is to wait for.
    for (int i = 0; malloc_is_glibc && i < 15000 && heap_in_use() < before + 2 * step - (1 << 20);
         ++i)
      std::this_thread::sleep_for(1ms);
    during = heap_in_use();
    fake.socket.close();
  });
  BOOST_TEST((e && e->code() == gcl::errc::peer_closed), code_and_text(e));
  BOOST_TEST(contains(code_and_text(e), "gcl: rank 0: lost rank 1 at 127.0.0.1:"),
             code_and_text(e));
  if (malloc_is_glibc) {
    BOOST_TEST(during >= before + 2 * step - (1 << 20), "grew by " << (during - before));
    BOOST_TEST(during <= before + 2 * step + (32 << 20), "grew by " << (during - before));
  }
}

BOOST_AUTO_TEST_CASE(a_queued_message_larger_than_the_receive_step_arrives_intact) {
  // Rank 1 sends 130 MiB on tag 1, then 8 bytes on tag 2; rank 0 receives tag 2 first, so the
  // big message is read while no receive waits for it: queued, in three steps.
  std::size_t const n = (std::size_t{130} << 20) / sizeof(std::uint32_t);
  std::vector<std::uint32_t> big(n);
  for (std::size_t i = 0; i < n; ++i) big[i] = static_cast<std::uint32_t>(i * 2654435761u);
  tcp_transport::group g(2, options(60s));
  std::vector<std::uint32_t> got(n);
  std::uint64_t small = 0;
  {
    std::jthread rank1([&] {
      auto t = g.connect(1);
      t.send(0, gcl::tag{1}, std::as_bytes(std::span(big)));
      std::uint64_t v = 42;
      t.send(0, gcl::tag{2}, std::as_bytes(std::span(&v, 1)));
    });
    auto t = g.connect(0);
    t.recv(1, gcl::tag{2}, std::as_writable_bytes(std::span(&small, 1)));
    t.recv(1, gcl::tag{1}, std::as_writable_bytes(std::span(got)));
  }
  BOOST_TEST(small == 42u);
  BOOST_TEST((got == big));
}

BOOST_AUTO_TEST_CASE(a_peer_that_dies_in_the_middle_of_a_large_send_is_reported_lost) {
  // Rank 0 sends 32 MiB to rank 1 (played by hand): its caller writes what the kernel takes at
  // once, the I/O thread the rest. Rank 1 reads 1 MiB and dies (a reset, as when a process is
  // killed with unread data). Rank 0's send fails naming rank 1, and so does its next call.
  std::vector<std::byte> big(std::size_t{32} << 20, std::byte{7});
  tcp_transport::group g(2, options(20s));
  std::optional<gcl::transport_error> error, next;
  fake_rank fake;
  {
    std::jthread rank0([&] {
      auto t = g.connect(0);
      try {
        t.send(1, gcl::tag{3}, big);
      } catch (gcl::transport_error const& e) {
        error = e;
      }
      try {
        t.send(1, gcl::tag{3}, std::span(big).first(8));
      } catch (gcl::transport_error const& e) {
        next = e;
      }
    });
    fake.join(g.options(), 1);
    std::vector<std::byte> some(std::size_t{1} << 20);
    BOOST_TEST(!read_for(fake.io, fake.socket, some, 20s).ec);
    fake.socket.set_option(asio::socket_base::linger(true, 0));  // close with a reset
    fake.socket.close();
  }
  for (auto const& e : {error, next}) {
    BOOST_TEST_MESSAGE(code_and_text(e));
    BOOST_TEST((e && e->code() == gcl::errc::peer_closed), code_and_text(e));
    BOOST_TEST(contains(code_and_text(e), "rank 1 at 127.0.0.1:"), code_and_text(e));
  }
}

// ---- what the rendezvous says ----

BOOST_AUTO_TEST_CASE(a_rank_waiting_for_higher_ranks_says_so_not_an_answered_connection) {
  // Ranks 0, 1, 2 real, rank 3 played by hand: it joins rank 0 (so every rank gets the table)
  // but never connects to ranks 1 and 2. Rank 2 connected to rank 1 and got its answer; both
  // must say they wait for rank 3, not "connected to rank 1 ..., waiting for its answer".
  tcp_transport::group g(4, options(3s));
  std::vector<std::optional<gcl::transport_error>> errors(3);
  fake_rank rank3;
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 3; ++r)
      ranks.emplace_back([&, r] {
        try {
          auto t = g.connect(r);
        } catch (gcl::transport_error const& e) {
          errors[r] = e;
        }
      });
    rank3.join(g.options(), 3);
  }
  BOOST_TEST(!errors[0], code_and_text(errors[0]));
  for (int r : {1, 2}) {
    auto text = code_and_text(errors[r]);
    BOOST_TEST((errors[r] && errors[r]->code() == gcl::errc::timeout), text);
    BOOST_TEST(contains(text, "rendezvous timed out after 3 s: "), text);
    BOOST_TEST(contains(text, "waiting for rank 3 to connect to this rank at port "), text);
    BOOST_TEST(!contains(text, "waiting for its answer"), text);
  }
}

BOOST_AUTO_TEST_CASE(ranks_that_joined_hear_why_rank_0_gave_up) {
  // Rank 0 waits 2 s for ranks 1 and 2; rank 2 never comes. Rank 1 (whose own timeout is
  // much longer) must hear rank 0's reason, not "End of file".
  tcp_transport::group g(3, options(2s));
  auto o1 = g.options();
  o1.rank = 1;
  o1.timeout = 60s;
  std::optional<gcl::transport_error> error0, error1;
  {
    std::jthread rank1([&] {  // first, so that it has joined long before rank 0 gives up
      try {
        tcp_transport t(o1);
      } catch (gcl::transport_error const& e) {
        error1 = e;
      }
    });
    std::jthread rank0([&] {
      try {
        auto t = g.connect(0);
      } catch (gcl::transport_error const& e) {
        error0 = e;
      }
    });
  }
  BOOST_TEST((error0 && error0->code() == gcl::errc::timeout), code_and_text(error0));
  BOOST_TEST(contains(code_and_text(error0), "for rank 2 to join (1 of 2 joined)"),
             code_and_text(error0));
  auto text = code_and_text(error1);
  BOOST_TEST((error1 && error1->code() == gcl::errc::timeout), text);
  BOOST_TEST(
      contains(text, "gcl: rank 1: rank 0 at 127.0.0.1:" + std::to_string(g.options().master_port) +
                         " refused the connection: rank 0 timed out after 2 s waiting "
                         "for rank 2 to join"),
      text);
  BOOST_TEST(!contains(text, "End of file"), text);
}

// A rank of wire version 5 sends a 96-byte join hello and nothing after it: rank 0 reads no
// CPUs from it (version 6 reads them only after a hello of its own version) and answers at
// once that the versions differ, rather than waiting for bytes that never come. And a rank of
// this version that refuses, because of its token, still reads its CPUs first, so that the
// refused rank gets the reason, not a reset connection.
BOOST_AUTO_TEST_CASE(an_older_rank_is_told_its_version_and_a_refused_one_why) {
  tcp_transport::group g(2, options(30s));
  std::optional<gcl::transport_error> error0;
  std::jthread rank0([&] {
    try {
      auto t = g.connect(0);
    } catch (gcl::transport_error const& e) {
      error0 = e;
    }
  });
  auto refusal = [&](std::uint16_t version, std::string const& token, std::size_t bytes) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), g.options().master_port});
    wire::hello h;
    h.version = version;
    h.rank = 1;
    h.size = 2;
    h.token = wire::token_hash(token);
    std::vector<std::byte> out(bytes);
    h.encode(out.data());
    BOOST_REQUIRE(!write_for(io, s, out, 10s).ec);
    std::array<std::byte, wire::reply_size> answer{};
    auto const got = read_for(io, s, answer, 5s);  // well before rank 0's 10 s for the CPUs
    if (got.ec) return "no reply: " + got.ec.message();
    auto r = wire::decode_reply(answer);
    return r ? r.value.text : "a bad reply: " + r.error;
  };
  auto const older = refusal(5, g.options().token, wire::hello_size);
  BOOST_TEST(contains(older, "refused: speaks gcl wire version 5, this rank speaks " +
                                 std::to_string(wire::wire_version)),
             older);
  auto const stranger =
      refusal(wire::wire_version, "not the job's", wire::hello_size + wire::hello_cpus_size);
  BOOST_TEST(contains(stranger, "refused: wrong job token"), stranger);
  // The job still forms with its real rank 1.
  auto o1 = g.options();
  o1.rank = 1;
  std::optional<gcl::transport_error> error1;
  try {
    tcp_transport t(o1);
  } catch (gcl::transport_error const& e) {
    error1 = e;
  }
  rank0.join();
  BOOST_TEST(!error0, code_and_text(error0));
  BOOST_TEST(!error1, code_and_text(error1));
}
