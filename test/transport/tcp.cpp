#define BOOST_TEST_MODULE transport_tcp
#include <boost/test/unit_test.hpp>

#include "../support/heap_in_use.hpp"
#include "../support/log_recording.hpp"
#include "shm_fork.hpp"

#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/communicator.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/tcp.hpp>

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <barrier>
#include <boost/asio.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using gcl::tcp_transport;
using namespace std::chrono_literals;

namespace {

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

// Boost.Test's assertions are not thread-safe: ranks record failures here, and the main thread
// checks them after the ranks have joined.
std::mutex failures_mutex;
std::vector<std::string> failures;
void expect(bool ok, std::string const& what) {
  if (ok) return;
  std::lock_guard lock(failures_mutex);
  failures.push_back(what);
}
void check_rank_failures() {
  std::lock_guard lock(failures_mutex);
  for (auto const& f : failures) BOOST_ERROR(f);
  BOOST_TEST(failures.empty());
  failures.clear();
}

std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::uint32_t>(seed * 2654435761u + i * 40503u);
  return v;
}

std::span<std::byte const> bytes(auto const& v) {
  return std::as_bytes(std::span(v));
}
std::span<std::byte> wbytes(auto&& v) {
  return std::as_writable_bytes(std::span(v));
}

// A collective's call_info for messages of up to `bytes` bytes (a frame may carry count x
// element size x world size bytes): the test's sends and receives then belong to a collective.
gcl::call_info collective_of(std::size_t bytes) {
  return gcl::make_call_info<std::uint32_t>(gcl::call_kind::all_gather, bytes / 4, -1, "", "test");
}

using gcl_test::heap_in_use;
using gcl_test::malloc_is_glibc;

gcl::tcp_options quick(std::chrono::milliseconds t = 20s) {
  gcl::tcp_options o;
  o.timeout = t;
  return o;
}

// Runs f(comm) for each rank of a tcp group on its own thread, catching per rank: for tests
// that look at every rank's error rather than spawn's first one.
template <class F>
std::vector<std::string> run_each(int n, gcl::tcp_options o, F f) {
  tcp_transport::group g(n, o);
  std::vector<std::string> errors(n);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        try {
          gcl::communicator comm(g.connect(r));
          f(comm);
        } catch (gcl::transport_error const& e) {
          errors[r] = std::string(e.code() == gcl::errc::mismatch  ? "mismatch|"
                                  : e.code() == gcl::errc::timeout ? "timeout|"
                                  : e.code() == gcl::errc::aborted ? "aborted|"
                                                                   : "other|") +
                      e.what();
        }
      });
  }
  return errors;
}

}  // namespace

static_assert(gcl::transport<tcp_transport>);
static_assert(gcl::call_aware_transport<tcp_transport>);
static_assert(gcl::group_transport<tcp_transport>);

BOOST_AUTO_TEST_CASE(point_to_point_all_pairs_all_sizes) {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    gcl::spawn<tcp_transport>(
        p,
        [p](auto& comm) {
          int me = comm.rank();
          for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t(p - 1), std::size_t(p),
                                std::size_t(p + 1), std::size_t{1001}, std::size_t{70000}}) {
            for (int d = 0; d < p; ++d) comm.send(d, pattern(n, 100 * me + d));  // includes self
            for (int s = 0; s < p; ++s) {
              std::vector<std::uint32_t> got(n);
              comm.recv(s, got);
              expect(got == pattern(n, 100 * s + me), "P=" + std::to_string(p) +
                                                          " n=" + std::to_string(n) + " from " +
                                                          std::to_string(s));
            }
          }
        },
        quick());
    check_rank_failures();
  }
}

BOOST_AUTO_TEST_CASE(fifo_per_source_and_tag_with_interleaved_tags_and_sizes) {
  // With the default polling and without (every wait sleeps at once).
  for (auto spin : {std::chrono::microseconds{50}, std::chrono::microseconds{0}}) {
    auto o = quick();
    o.spin = spin;
    gcl::spawn<tcp_transport>(
        3,
        [](auto& comm) {
          auto& t = comm.transport();
          int const me = t.rank();
          if (me != 0) {
            for (std::uint32_t i = 0; i < 300; ++i) {
              auto v = pattern(i % 17 + static_cast<std::size_t>(me), i);
              t.send(0, gcl::tag{i % 3}, bytes(v));
            }
          } else {
            for (std::uint32_t tg : {2u, 0u, 1u})
              for (int src : {2, 1})
                for (std::uint32_t i = tg; i < 300; i += 3) {
                  std::vector<std::uint32_t> got(i % 17 + static_cast<std::size_t>(src));
                  t.recv(src, gcl::tag{tg}, wbytes(got));
                  expect(got == pattern(got.size(), i),
                         "message " + std::to_string(i) + " from " + std::to_string(src));
                }
          }
        },
        o);
    check_rank_failures();
  }
}

BOOST_AUTO_TEST_CASE(a_rank_polling_one_peer_still_lets_another_finish_a_large_send) {
  // With polling (spin), a rank that keeps receiving from one peer reads that peer's socket
  // itself and keeps its I/O thread resting (out of epoll_wait, which every arrival would wake);
  // another peer's large send to it must still complete. Rank 0 ping-pongs with rank 1 while
  // rank 2 sends it 16 MiB that rank 0 receives only at the end; halfway, rank 1 waits for
  // rank 2's word, which comes only once rank 2's large send is done, so the ping-pong stalls
  // until rank 0's transport reads that send without a receive posted for it.
  // Bounded by 90 s, not 20: alone on a 2-core VM it takes 0.3 s, but beside other busy
  // programs (ctest -j2, two busy loops) 3-8 s unsanitized and 30 s under ThreadSanitizer, mostly
  // waiting: its three ranks share the 2 cores, so their polling yields, and each yield hands
  // the core to a busy program for a time slice (doc/tcp.md, "Another program on the rank's
  // core"). The bound catches a hang; it does not time.
  constexpr std::size_t n = (std::size_t{16} << 20) / sizeof(std::uint32_t);
  constexpr std::uint32_t rounds = 2000;
  auto o = quick(90s);
  o.spin = std::chrono::microseconds{50};
  gcl::spawn<tcp_transport>(
      3,
      [&](auto& comm) {
        auto& t = comm.transport();
        std::vector<std::uint32_t> one(1);
        switch (t.rank()) {
          case 0:
            for (std::uint32_t i = 0; i < rounds; ++i) {
              one[0] = i;
              t.send(1, gcl::tag{1}, bytes(one));
              t.recv(1, gcl::tag{2}, wbytes(one));
              expect(one[0] == i + 1,
                     "pong " + std::to_string(i) + " came back as " + std::to_string(one[0]));
            }
            {
              std::vector<std::uint32_t> got(n);
              t.recv(2, gcl::tag{3}, wbytes(got));
              expect(got == pattern(n, 3), "rank 2's 16 MiB arrived wrong");
            }
            break;
          case 1:
            for (std::uint32_t i = 0; i < rounds; ++i) {
              if (i == rounds / 2) {
                t.recv(2, gcl::tag{4}, wbytes(one));
                expect(one[0] == 42, "rank 2's word arrived wrong");
              }
              t.recv(0, gcl::tag{1}, wbytes(one));
              ++one[0];
              t.send(0, gcl::tag{2}, bytes(one));
            }
            break;
          default:
            t.send(0, gcl::tag{3}, bytes(pattern(n, 3)));
            one[0] = 42;
            t.send(1, gcl::tag{4}, bytes(one));
        }
      },
      o);
  check_rank_failures();
}

BOOST_AUTO_TEST_CASE(a_message_the_waiting_caller_reads_itself_ends_its_wait) {
  // A receive whose caller reads its peer's socket itself may queue the very frame it waits
  // for (a zero-byte one is never read into a posted receive); that must end the wait as any
  // arrival does. It did not when the read outlasted the polling (spin): the caller slept
  // until the status queries' timer, 100 ms later. The first barrier of a new job hit it
  // nearly every time (its first read also faults in pooled buffers); the transport says so
  // when a wait no event ended finds its message already there (engine.hpp, receive).
  gcl_test::log_recording log;
  auto o = quick();
  o.spin = std::chrono::microseconds{50};  // what from_env sets where ranks have cores
  for (int job = 0; job < 10; ++job) {
    gcl::spawn<tcp_transport>(
        2,
        [&](auto& comm) {
          gcl::barrier(comm);
          gcl::barrier(comm);
          auto& t = comm.transport();
          for (int i = 0; i < 20; ++i)  // zero-byte messages, each awaited before it is sent
            if (t.rank() == 0) {
              t.recv(1, gcl::tag{5}, std::span<std::byte>());
              t.send(1, gcl::tag{6}, std::span<std::byte const>());
            } else {
              std::this_thread::sleep_for(std::chrono::microseconds(200));
              t.send(0, gcl::tag{5}, std::span<std::byte const>());
              t.recv(0, gcl::tag{6}, std::span<std::byte>());
            }
        },
        o);
    check_rank_failures();
  }
  std::vector<std::string> missed;
  for (auto const& [level, text] : log.containing("missed wake-up"))
    if (level >= gcl::log_level::warning) missed.push_back(text);
  BOOST_TEST(missed.empty(), missed.size() << " waits slept past their message, the first: "
                                           << (missed.empty() ? "" : missed.front()));
}

// The threads of this process at nice 19 (a transport's I/O thread, where it yields to its
// polling caller).
int threads_at_nice_19() {
  int n = 0;
  for (auto const& task : std::filesystem::directory_iterator("/proc/self/task")) {
    errno = 0;
    int const nice =
        ::getpriority(PRIO_PROCESS, static_cast<id_t>(std::stoi(task.path().filename())));
    if (errno == 0 && nice == 19) ++n;
  }
  return n;
}

BOOST_AUTO_TEST_CASE(the_io_thread_gives_way_to_its_caller_only_where_ranks_share_cores) {
  // With polling, the I/O thread runs at nice 19 where ranks share cores (it must not preempt
  // a rank that polls), and at the process's own priority where each rank has a core: there it
  // runs only while its caller sleeps, to read for it, and at nice 19 any other busy program
  // on the core would hold it off for a scheduler tick per message.
  unsigned const cpus = std::thread::hardware_concurrency();
  auto count_while_all_live = [](int ranks) {
    std::atomic<int> seen{-1};
    auto o = quick();
    o.spin = std::chrono::microseconds{50};
    gcl::spawn<tcp_transport>(
        ranks,
        [&](auto& comm) {
          gcl::barrier(comm);  // every rank's transport, and its I/O thread, is up
          if (comm.rank() == 0) seen = threads_at_nice_19();
          gcl::barrier(comm);
        },
        o);
    return seen.load();
  };
  if (cpus >= 2) BOOST_TEST(count_while_all_live(2) == 0);
  int const crowded = static_cast<int>(std::max(cpus, 1u)) + 1;
  BOOST_TEST(count_while_all_live(crowded) == crowded);
}

BOOST_AUTO_TEST_CASE(eager_send_256_mib_everybody_sends_then_receives) {
  // Both ranks send 256 MiB before either receives: must not deadlock.
  constexpr std::size_t n = (std::size_t{256} << 20) / sizeof(std::uint32_t);
  gcl::spawn<tcp_transport>(
      2,
      [](auto& comm) {
        int me = comm.rank(), other = 1 - me;
        std::vector<std::uint32_t> out(n), in(n);
        for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint32_t>(i * 7 + me);
        comm.send(other, out);
        comm.recv(other, in);
        bool ok = true;
        for (std::size_t i = 0; i < n; ++i)
          ok &= in[i] == static_cast<std::uint32_t>(i * 7 + other);
        expect(ok, "rank " + std::to_string(me) + ": 256 MiB arrived wrong");
      },
      quick(60s));
  check_rank_failures();
}

BOOST_AUTO_TEST_CASE(large_messages_sent_before_any_receive_complete_at_2_and_8_ranks) {
  // Every rank sends 4 MiB (more than the sockets hold) to the next rank before it receives
  // from the previous one, point-to-point and inside a collective (where a large message that
  // arrives early is left in the socket for its receive): no rank may wait for its receiver.
  constexpr std::size_t n = (std::size_t{4} << 20) / sizeof(std::uint32_t);
  for (int p : {2, 8})
    for (bool collective : {false, true}) {
      gcl::spawn<tcp_transport>(
          p,
          [&](auto& comm) {
            int const me = comm.rank(), next = (me + 1) % p, prev = (me + p - 1) % p;
            auto out = pattern(n, static_cast<std::uint32_t>(me));
            std::vector<std::uint32_t> in(n);
            auto exchange = [&](gcl::tag tg) {
              comm.transport().send(next, tg, bytes(out));
              comm.transport().recv(prev, tg, wbytes(in));
            };
            if (collective) {
              auto scope = comm.begin_call(collective_of(n * 4));
              exchange(gcl::detail::collective_tag);
            } else {
              exchange(gcl::tag{0});
            }
            expect(in == pattern(n, static_cast<std::uint32_t>(prev)),
                   "P=" + std::to_string(p) + (collective ? " collective" : " send/recv") +
                       ": rank " + std::to_string(me) + " got wrong bytes");
          },
          quick());
      check_rank_failures();
    }
}

BOOST_AUTO_TEST_CASE(early_large_messages_keep_fifo_order_per_tag) {
  // Rank 1 sends, on tags 1 and 2: 1 MiB (t1), 8 bytes (t1), 2 MiB (t2), 512 KiB (t1), 12 bytes
  // (t2); rank 0 receives only when all of it has been sent or is blocked in the sockets,
  // either tag first, point-to-point and inside a collective. Each receive gets its own bytes:
  // a large frame left in the socket for its receive keeps its place in its tag's order, and a
  // receive on the other tag behind it still gets its message.
  struct msg {
    std::uint32_t tag;
    std::size_t words;
  };
  std::vector<msg> const sent{{1, 1 << 18}, {1, 2}, {2, 1 << 19}, {1, 1 << 17}, {2, 3}};
  for (bool collective : {false, true})
    for (std::uint32_t first_tag : {1u, 2u}) {
      std::atomic<bool> all_sent{false};
      gcl::spawn<tcp_transport>(
          2,
          [&](auto& comm) {
            auto& t = comm.transport();
            auto run = [&] {
              if (t.rank() == 1) {
                for (std::uint32_t i = 0; i < sent.size(); ++i)
                  t.send(0, gcl::tag{sent[i].tag}, bytes(pattern(sent[i].words, i)));
                all_sent = true;
                return;
              }
              // Not in a transport call: nothing here drains what arrives.
              for (int i = 0; i < 200 && !all_sent; ++i) std::this_thread::sleep_for(1ms);
              std::this_thread::sleep_for(20ms);
              for (std::uint32_t tg : {first_tag, 3 - first_tag})
                for (std::uint32_t i = 0; i < sent.size(); ++i) {
                  if (sent[i].tag != tg) continue;
                  std::vector<std::uint32_t> got(sent[i].words);
                  t.recv(1, gcl::tag{tg}, wbytes(got));
                  expect(got == pattern(got.size(), i),
                         "message " + std::to_string(i) + " (tag " + std::to_string(tg) + ", tag " +
                             std::to_string(first_tag) + " first" +
                             (collective ? ", collective" : "") + ") arrived wrong");
                }
            };
            if (collective) {
              auto scope = comm.begin_call(collective_of(std::size_t{2} << 20));
              run();
            } else {
              run();
            }
          },
          quick());
      check_rank_failures();
    }
}

BOOST_AUTO_TEST_CASE(an_early_large_message_waits_in_the_socket_for_its_receive) {
  // Inside a collective, 32 MiB arrive 100 ms before rank 0 receives them: rank 0 holds no
  // buffer for them meanwhile (they wait in the sockets; rank 1's send waits for the receive),
  // then reads them straight into the receive buffer, intact.
  constexpr std::size_t n = (std::size_t{32} << 20) / sizeof(std::uint32_t);
  auto const big = pattern(n, 7);
  std::atomic<bool> in_call{false};
  std::size_t before = 0, during = 0;
  gcl::spawn<tcp_transport>(
      2,
      [&](auto& comm) {
        auto scope = comm.begin_call(collective_of(n * 4));
        auto& t = comm.transport();
        if (t.rank() == 1) {
          for (int i = 0; i < 10000 && !in_call; ++i) std::this_thread::sleep_for(1ms);
          t.send(0, gcl::detail::collective_tag, bytes(big));
          return;
        }
        std::vector<std::uint32_t> got(n);  // allocated (and touched) before the measurement
        before = heap_in_use();
        in_call = true;
        std::this_thread::sleep_for(100ms);
        during = heap_in_use();
        t.recv(1, gcl::detail::collective_tag, wbytes(got));
        expect(got == big, "32 MiB arrived wrong");
      },
      quick());
  check_rank_failures();
  if (malloc_is_glibc)
    BOOST_TEST(during < before + (std::size_t{8} << 20), "grew by " << (during - before));
}

BOOST_AUTO_TEST_CASE(a_large_send_completes_while_the_receiver_is_outside_any_call) {
  // Sends are eager: rank 1's 16 MiB send returns while rank 0 is busy outside the transport,
  // waiting for that very return (a message left in the socket for its receive is read into
  // a buffer when the receiver is in no call).
  constexpr std::size_t n = (std::size_t{16} << 20) / sizeof(std::uint32_t);
  std::atomic<bool> returned{false};
  gcl::spawn<tcp_transport>(
      2,
      [&](auto& comm) {
        auto& t = comm.transport();
        if (t.rank() == 1) {
          t.send(0, gcl::tag{4}, bytes(pattern(n, 4)));
          returned = true;
          return;
        }
        for (int i = 0; i < 10000 && !returned; ++i) std::this_thread::sleep_for(1ms);
        expect(returned, "rank 1's send waited for rank 0's receive");
        std::vector<std::uint32_t> got(n);
        t.recv(1, gcl::tag{4}, wbytes(got));
        expect(got == pattern(n, 4), "16 MiB arrived wrong");
      },
      quick());
  check_rank_failures();
}

BOOST_AUTO_TEST_CASE(sendrecv_of_large_frames_lands_in_the_receive_buffers_on_time_or_late) {
  // A ring step of 32 MiB per rank (sendrecv: every rank sends to its left and receives from
  // its right), three times: at 2 ranks (one peer both ways) and 3 (two peers), with every rank
  // on time, and with one rank 50 ms late each time (its peers' sends then wait for it). The
  // frames land straight in the receive buffers: a frame that is read into a pooled buffer
  // first (what a rank whose send waits would do) stays in the pool, and the heap would show it.
  constexpr std::size_t n = (std::size_t{32} << 20) / sizeof(std::uint32_t);
  for (int p : {2, 3})
    for (bool late : {false, true}) {
      std::vector<std::size_t> before(static_cast<std::size_t>(p)),
          after(static_cast<std::size_t>(p));
      std::barrier measured(p);
      gcl::spawn<tcp_transport>(
          p,
          [&](auto& comm) {
            int const me = comm.rank(), left = (me + p - 1) % p, right = (me + 1) % p;
            // Allocated (and touched) before measuring.
            auto const mine = pattern(n, static_cast<std::uint32_t>(me));
            auto const theirs = pattern(n, static_cast<std::uint32_t>(right));
            std::vector<std::uint32_t> got(n, 0);
            measured.arrive_and_wait();
            before[me] = heap_in_use();
            measured.arrive_and_wait();
            for (std::uint32_t i = 0; i < 3; ++i) {
              auto scope = comm.begin_call(collective_of(n * 4));
              // Every rank is in the call before any frame of it is sent: a frame that comes
              // while its receiver is outside any call for over a millisecond (a loaded
              // machine's scheduling) is queued, which is not what this counts.
              measured.arrive_and_wait();
              if (late && me == 1) std::this_thread::sleep_for(50ms);
              try {
                comm.sendrecv(left, mine, right, got, gcl::detail::collective_tag);
              } catch (...) {
                measured.arrive_and_drop();  // the others do not wait for this rank
                throw;
              }
              expect(got == theirs, "rank " + std::to_string(me) + " got a wrong frame");
              std::fill(got.begin(), got.end(), 0);
            }
            after[me] = heap_in_use();
          },
          quick());
      check_rank_failures();
      if (malloc_is_glibc)  // the process's heap: every rank's growth is in each reading
        for (int r = 0; r < p; ++r)
          BOOST_TEST(after[r] < before[r] + (std::size_t{8} << 20),
                     p << " ranks, " << (late ? "late" : "on time") << ": rank " << r
                       << "'s heap grew by " << (after[r] - before[r]));
    }
}

BOOST_AUTO_TEST_CASE(sendrecv_of_large_frames_of_different_sizes_fails_on_both_ranks) {
  // Rank 0 sends and expects 16 MiB, rank 1 32 MiB: each rank's send is still under way when
  // the other's header shows the mismatch. Both fail naming the mismatch (neither waits for
  // good for a send the peer will never read, nor reports a lost connection instead), and
  // neither crashes on the abandoned frame. A rank that finds it reads the rest of the peer's
  // frame and drops it, so the peer's send ends and the abort frames behind it get through.
  auto errors = run_each(2, quick(), [](auto& comm) {
    std::size_t const n = (std::size_t{16} << 20) / 4 * static_cast<std::size_t>(comm.rank() + 1);
    auto const mine = pattern(n, 1);
    std::vector<std::uint32_t> got(n);
    auto scope = comm.begin_call(collective_of(std::size_t{32} << 20));
    int const peer = 1 - comm.rank();
    comm.sendrecv(peer, mine, peer, got, gcl::detail::collective_tag);
  });
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST_INFO(errors[r]);
    BOOST_TEST(contains(errors[r], "mismatch|"));
    BOOST_TEST((contains(errors[r], "expected 16777216 bytes") ||
                contains(errors[r], "expected 33554432 bytes")));
  }
}

BOOST_AUTO_TEST_CASE(mismatched_calls_fail_on_both_ranks_naming_both_calls) {
  auto errors = run_each(2, quick(), [](auto& comm) {
    // Both ranks believe they are in all_reduce #1, with different counts.
    std::size_t count = comm.rank() == 0 ? 10 : 12;
    auto scope = comm.begin_call(
        gcl::make_call_info<float>(gcl::call_kind::all_reduce, count, -1, "sum", "ring"));
    std::vector<float> out(count, 1.0f), in(count);
    int other = 1 - comm.rank();
    comm.transport().send(other, gcl::detail::collective_tag, bytes(out));
    comm.transport().recv(other, gcl::detail::collective_tag, wbytes(in));
  });
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST_INFO("rank " << r << ": " << errors[r]);
    BOOST_TEST(contains(errors[r], "mismatch|"));
    BOOST_TEST(contains(errors[r], "all_reduce #1 (ring, sum, 10 x float32)"));
    BOOST_TEST(contains(errors[r], "all_reduce #1 (ring, sum, 12 x float32)"));
  }
}

BOOST_AUTO_TEST_CASE(different_collectives_mismatch_and_wrong_size_mismatch) {
  auto errors = run_each(2, quick(), [](auto& comm) {
    auto kind = comm.rank() == 0 ? gcl::call_kind::broadcast : gcl::call_kind::reduce;
    auto scope = comm.begin_call(gcl::make_call_info<int>(kind, 4, 0, "", "tree"));
    std::vector<int> v(4);
    if (comm.rank() == 1) {
      comm.transport().send(0, gcl::detail::collective_tag, bytes(v));
      comm.transport().recv(0, gcl::detail::collective_tag, wbytes(v));  // waits; rank 0 tells it
    } else {
      comm.transport().recv(1, gcl::detail::collective_tag, wbytes(v));
    }
  });
  BOOST_TEST(contains(errors[0], "mismatch|"));
  BOOST_TEST(contains(errors[0], "broadcast #1"));
  BOOST_TEST(contains(errors[0], "reduce #1"));
  BOOST_TEST(contains(errors[1], "mismatch|"), errors[1]);  // told by rank 0

  auto sizes = run_each(2, quick(), [](auto& comm) {
    std::vector<int> v(comm.rank() == 0 ? 3 : 4);
    comm.send(1 - comm.rank(), v);
    comm.recv(1 - comm.rank(), v);
  });
  BOOST_TEST(contains(sizes[0], "mismatch|"), sizes[0]);
  BOOST_TEST(contains(sizes[1], "mismatch|"), sizes[1]);
  // Whichever rank looks first names both sizes; the other is told.
  BOOST_TEST((contains(sizes[0] + sizes[1], "expected 12 bytes") ||
              contains(sizes[0] + sizes[1], "expected 16 bytes")));
  BOOST_TEST(contains(sizes[0] + sizes[1], "bytes for send/recv"));
}

BOOST_AUTO_TEST_CASE(recv_that_nobody_sends_times_out_naming_the_peer) {
  auto errors = run_each(3, quick(300ms), [](auto& comm) {
    int x = 0;
    comm.recv((comm.rank() + 1) % 3, x, gcl::tag{5});
  });
  for (int r = 0; r < 3; ++r) {
    BOOST_TEST_INFO(errors[r]);
    // The first to time out tells the others, who may report that instead (still not a hang).
    BOOST_TEST((contains(errors[r], "timeout|") || contains(errors[r], "aborted|")));
  }
  int timeouts = 0;
  for (auto& e : errors)
    if (contains(e, "timeout|")) {
      ++timeouts;
      BOOST_TEST(contains(e, "timed out after 300 ms"));
      BOOST_TEST(contains(e, "127.0.0.1:"));
    }
  BOOST_TEST(timeouts >= 1);
}

// A timed-out receive lists what did come instead, each with how long it had waited: that tells
// a message that came late from one that was here and not taken.
BOOST_AUTO_TEST_CASE(a_timed_out_recv_says_what_came_instead_and_for_how_long) {
  std::atomic<bool> rank0_failed{false};
  auto errors = run_each(2, quick(500ms), [&](auto& comm) {
    int x = 7;
    if (comm.rank() == 1) {
      comm.send(0, x, gcl::tag{6});
      // Still there, outside any call, until rank 0 has given up (a rank that left would be
      // reported as gone instead); bounded, should rank 0 never fail.
      for (int i = 0; i < 30000 && !rank0_failed; ++i) std::this_thread::sleep_for(1ms);
      return;
    }
    try {
      comm.recv(1, x, gcl::tag{5});
    } catch (...) {
      rank0_failed = true;
      throw;
    }
  });
  BOOST_TEST(contains(errors[0], "timeout|"), errors[0]);
  BOOST_TEST(contains(errors[0], "Received here but not read: 4 bytes from rank 1 (tag 6, "),
             errors[0]);
  BOOST_TEST(std::regex_search(errors[0], std::regex(R"(, here for [0-9.]+ m?s\))")), errors[0]);
  BOOST_TEST(errors[1].empty(), errors[1]);
}

BOOST_AUTO_TEST_CASE(a_throwing_rank_aborts_the_others_through_spawn) {
  // Ranks 0, 1 and 3 wait for rank 2 with a 60 s timeout when it throws: spawn rethrows rank 2's
  // error, and each of the others is released by the abort, naming rank 2, not by its timeout.
  // Asserted: who reported what, never how fast. Rank 2 throws only once it has heard from every
  // other rank, so that none of them can still be connecting (outside the checked code) when
  // the abort comes, however slowly a loaded machine starts them.
  std::vector<std::string> seen(4);  // each rank writes only its own slot
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<tcp_transport>(
          4,
          [&](auto& comm) {
            if (comm.rank() == 2) {
              for (int r : {0, 1, 3}) comm.template recv<int>(r);
              throw std::runtime_error("rank 2 gives up");
            }
            try {
              int x = comm.rank();
              comm.send(2, x);
              comm.recv(2, x);
            } catch (gcl::transport_error const& e) {
              seen[comm.rank()] =
                  std::string(e.code() == gcl::errc::aborted ? "aborted|" : "other|") + e.what();
              throw;
            }
          },
          quick(60s)),
      std::runtime_error, [](auto const& e) {
        BOOST_TEST_MESSAGE(e.what());
        return std::string(e.what()) == "rank 2 gives up";
      });
  for (int r : {0, 1, 3}) {
    BOOST_TEST_MESSAGE("rank " << r << ": " << seen[r]);
    BOOST_TEST(seen[r].starts_with("aborted|"), "rank " << r << ": " << seen[r]);
    // Released either by spawn's abort of the group (which quotes rank 2's error) or by rank 2's
    // abort frame on the socket, whichever comes first: both name rank 2.
    BOOST_TEST((contains(seen[r], "rank 2 failed: rank 2 gives up") ||
                (contains(seen[r], "rank 2 at 127.0.0.1:") &&
                 contains(seen[r], "failed, so this job is over"))),
               "rank " << r << ": " << seen[r]);
  }
}

BOOST_AUTO_TEST_CASE(a_failure_that_comes_in_while_a_rank_asks_its_peers_is_what_it_reports) {
  // Ranks are processes forked from this test (a stopped rank must be one): rank 2 of 3 is
  // stopped (SIGSTOP) in an all_reduce loop, so ranks 0 and 1 wait from about the same moment.
  // Rank 1 times out after 2 s, rank 0 after 2.5 s; each then asks its peers where they are and
  // gives rank 2 a second to answer, so rank 1's error (its abort frame) reaches rank 0 about
  // half a second into rank 0's own asking. The first failure wins: rank 0 must report rank 1's
  // error, which names rank 2, not a timeout of its own (whose report, in the race this pins
  // down, blamed ranks that had not answered only because rank 1's failure had ended them).
  gcl_test::temp_dir dir;
  tcp_transport::group g(3, quick(2500ms));  // rank 0's timeout
  std::vector<pid_t> pids;
  for (int r = 0; r < 3; ++r)
    pids.push_back(gcl_test::fork_rank(dir, r, [&] {
      auto o = g.options();
      o.rank = r;
      o.timeout = 2s;
      gcl::communicator<tcp_transport> comm(r == 0 ? g.connect(0) : tcp_transport(o));
      for (long it = 0;; ++it) {
        std::vector<float> v(64, 1.0f);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
        if (v[0] != 3.0f) throw std::runtime_error("wrong sum");
        if (it == 0) std::ofstream(dir.file(r, ".started")) << "1";
      }
    }));
  if (auto why = gcl_test::wait_until_started(dir, pids); !why.empty()) BOOST_FAIL(why);
  ::kill(pids[2], SIGSTOP);
  auto rank1 = gcl_test::finish_rank(dir, pids[1], 1);
  auto rank0 = gcl_test::finish_rank(dir, pids[0], 0);
  ::kill(pids[2], SIGKILL);
  gcl_test::finish_rank(dir, pids[2], 2);
  BOOST_TEST_MESSAGE("rank 1: " << rank1.error.substr(0, 300));
  BOOST_TEST_MESSAGE("rank 0: " << rank0.error.substr(0, 300));
  BOOST_TEST(rank1.exited_with(1));
  BOOST_TEST(contains(rank1.error, "timed out after 2 s"), rank1.error);
  BOOST_TEST(contains(rank1.error, "rank 2 does not answer"), rank1.error);
  BOOST_TEST(rank0.exited_with(1));
  BOOST_TEST((contains(rank0.error, "rank 1 at 127.0.0.1:") &&
              contains(rank0.error, "failed, so this job is over. Its error: gcl: rank 1:")),
             rank0.error);
  BOOST_TEST(contains(rank0.error, "rank 2 does not answer"), rank0.error);
  BOOST_TEST(!contains(rank0.error, "timed out after 2.5 s"), rank0.error);
}

BOOST_AUTO_TEST_CASE(a_rank_that_finishes_early_does_not_drop_its_last_messages) {
  gcl::spawn<tcp_transport>(
      3,
      [](auto& comm) {
        if (comm.rank() != 0) {
          for (int i = 0; i < 50; ++i) comm.send(0, pattern(1000 + i, i + comm.rank()));
          return;  // destructor runs while rank 0 still reads
        }
        std::this_thread::sleep_for(200ms);
        for (int s : {1, 2})
          for (int i = 0; i < 50; ++i) {
            std::vector<std::uint32_t> v(1000 + i);
            comm.recv(s, v);
            expect(v == pattern(v.size(), i + s),
                   "message " + std::to_string(i) + " from " + std::to_string(s));
          }
        int x;  // rank 1 has said bye: a receive from it fails at once, naming it
        try {
          comm.recv(1, x);
          expect(false, "recv from a finished rank did not throw");
        } catch (gcl::transport_error const& e) {
          expect(e.code() == gcl::errc::peer_closed && contains(e.what(), "rank 1 at"), e.what());
        }
      },
      quick());
  check_rank_failures();
}

namespace {

void stranger(std::uint16_t port, std::string const& bytes_to_send) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket s(io);
  boost::system::error_code ec;
  s.connect({boost::asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return;
  if (!bytes_to_send.empty()) boost::asio::write(s, boost::asio::buffer(bytes_to_send), ec);
  s.close(ec);
}

// A hello, and after a join hello the rank's CPUs (none known), as a rank sends them.
std::string hello_bytes(std::string const& token, int rank, int size, gcl::detail::hello_kind k) {
  gcl::detail::hello h;
  h.kind = k;
  h.rank = rank;
  h.size = size;
  h.token = gcl::detail::token_hash(token);
  bool const join = k == gcl::detail::hello_kind::join;
  std::string s(gcl::detail::hello_size + (join ? gcl::detail::hello_cpus_size : 0), '\0');
  h.encode(reinterpret_cast<std::byte*>(s.data()));
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(strangers_on_the_ports_do_not_disturb_the_job) {
  auto o = quick();
  o.token = "job-42";
  tcp_transport::group g(4, o);
  auto port = g.options().master_port;
  auto attack = [&] {
    stranger(port, "garbage\n");
    stranger(port, "");
    stranger(port, hello_bytes("wrong", 1, 4, gcl::detail::hello_kind::join));
    stranger(port, hello_bytes("job-42", 1, 5, gcl::detail::hello_kind::join));
    stranger(port, hello_bytes("job-42", 0, 4, gcl::detail::hello_kind::join));
  };
  attack();  // during the rendezvous: before any rank has even started
  std::atomic<bool> done{false};
  std::atomic<std::uint16_t> peer_port{0};
  std::vector<std::uint64_t> sums(4);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 4; ++r)
      ranks.emplace_back([&, r] {
        gcl::communicator comm(g.connect(r));
        if (r == 3) peer_port = comm.transport().port();
        for (int round = 0; round < 100; ++round) {
          std::uint64_t mine = static_cast<std::uint64_t>(r + 1) * (round + 1), total = mine;
          for (int d = 0; d < 4; ++d)
            if (d != r) comm.send(d, mine);
          for (int s = 0; s < 4; ++s)
            if (s != r) total += comm.recv<std::uint64_t>(s);
          sums[r] += total;
          if (round == 50) std::this_thread::sleep_for(20ms);
        }
      });
    std::jthread attacker([&] {
      while (!done) {
        attack();
        if (auto p3 = peer_port.load()) {  // a peer's port, not only rank 0's
          stranger(p3, "garbage\n");
          stranger(p3, hello_bytes("job-42", 4, 4, gcl::detail::hello_kind::peer));
          stranger(p3, hello_bytes("wrong", 3, 4, gcl::detail::hello_kind::peer));
        }
        std::this_thread::sleep_for(30ms);
      }
    });
    for (auto& t : ranks) t.join();
    done = true;
  }
  for (int r = 0; r < 4; ++r) BOOST_TEST(sums[r] == 10u * 5050u);
}

BOOST_AUTO_TEST_CASE(wrong_token_rank_is_refused_with_a_clear_error) {
  auto o = quick(2s);
  o.token = "right";
  tcp_transport::group g(2, o);
  auto bad = g.options();
  bad.rank = 1;
  bad.token = "wrong";
  std::string error1;
  std::jthread r0([&] {
    try {
      g.connect(0);
    } catch (gcl::transport_error const&) {
    }
  });
  try {
    tcp_transport t(bad);
  } catch (gcl::transport_error const& e) {
    error1 = e.what();
    BOOST_TEST((e.code() == gcl::errc::protocol));
  }
  BOOST_TEST(contains(error1, "wrong job token"), error1);
}

// Whether ranks share cores is each rank's own knowledge (tcp_options::shares_cores, from the
// launcher's local size); the rendezvous tells every rank whether any rank does, so that a
// choice made by it (gcl::by_size's) is the same on every rank. Here rank 1, rank 2 or no rank
// says so, then every rank (rank 0, the table's maker, among them). The same for more than two
// ranks per CPU (tcp_options::over_two_per_cpu), said by another rank, or the same one, and
// for two or more (tcp_options::crowds_cores).
BOOST_AUTO_TEST_CASE(every_rank_learns_whether_any_rank_shares_cores) {
  struct said {
    int sharing, over_two, crowding;
  };
  for (said const w : {said{-1, -1, -1}, said{1, -1, -1}, said{2, 1, 1}, said{1, 2, 2},
                       said{-1, -1, 2}, said{2, -1, 1}}) {
    // not bindings: lambdas capture them
    int const sharing = w.sharing, over_two = w.over_two, crowding = w.crowding;
    tcp_transport::group g(3, quick(10s));
    std::vector<int> answers(3, -1);  // -1: no answer; -2: the rank failed; else the two bits
    {
      std::vector<std::jthread> ranks;
      for (int r = 0; r < 3; ++r)
        ranks.emplace_back([&, r] {
          auto o = g.options();
          o.rank = r;
          o.shares_cores = r == sharing || r == over_two || r == crowding;
          o.over_two_per_cpu = r == over_two;
          o.crowds_cores = r == crowding;
          try {
            // Rank 0 through the group, which holds its bound port; the others as processes do.
            auto t = r == 0 ? g.connect(0) : tcp_transport(o);
            answers[static_cast<std::size_t>(r)] = (t.ranks_share_cores() ? 1 : 0) |
                                                   (t.ranks_over_two_per_cpu() ? 2 : 0) |
                                                   (t.ranks_crowd_cores() ? 4 : 0);
          } catch (std::exception const&) {
            answers[static_cast<std::size_t>(r)] = -2;
          }
        });
    }
    std::vector<int> const want(3, (sharing > 0 || over_two > 0 || crowding > 0 ? 1 : 0) |
                                       (over_two > 0 ? 2 : 0) | (crowding > 0 ? 4 : 0));
    BOOST_TEST(answers == want, "rank " << sharing << " shares cores, rank " << over_two
                                        << " has more than two to a CPU, rank " << crowding
                                        << " two or more");
  }
  auto o = quick(10s);
  o.shares_cores = true;
  auto answers = gcl::spawn<tcp_transport>(
      3, [](auto& comm) { return comm.transport().ranks_share_cores(); }, o);
  BOOST_TEST((answers == std::vector<bool>{true, true, true}));
}

// Where every rank of a machine gives its CPUs (tcp_options::cpus, from_env's affinity mask),
// rank 0 judges from them whether the machine's ranks share cores, in place of each rank's
// guess from how many ranks its launcher says share the host: a launcher that binds each rank
// to a CPU of its own (mpirun -n 2) leaves every rank one CPU of two ranks, which it takes for
// shared. The polling follows the judgement where GCL_SPIN_US did not set it
// (spin_follows_cores). Two ranks per case, rank 0 through the group.
BOOST_AUTO_TEST_CASE(rank_0_judges_shared_cores_from_every_ranks_cpus) {
  struct rank_says {
    std::vector<int> cpus;
    bool guess;  // tcp_options::shares_cores, as from_env would have set it
  };
  struct answer {
    bool shared;
    std::chrono::microseconds spin;
    bool operator==(answer const&) const = default;
  };
  auto const own = gcl::tcp_options::default_spin, shared = gcl::tcp_options::shared_core_spin;
  auto run = [](rank_says const& r0, rank_says const& r1, bool follows) {
    auto opts = quick(10s);
    opts.spin_follows_cores = follows;
    auto config = [&](gcl::tcp_options& o, rank_says const& r) {
      o.cpus = r.cpus;
      o.shares_cores = r.guess;
      o.spin = gcl::tcp_options::spin_for_cores(r.guess, false);
    };
    config(opts, r0);
    tcp_transport::group g(2, opts);
    std::vector<std::optional<answer>> answers(2);
    {
      std::jthread one([&] {
        auto o = g.options();
        o.rank = 1;
        config(o, r1);
        try {
          tcp_transport t(o);
          answers[1] = answer{t.ranks_share_cores(), t.config().spin};
        } catch (std::exception const&) {
        }
      });
      try {
        auto t = g.connect(0);
        answers[0] = answer{t.ranks_share_cores(), t.config().spin};
      } catch (std::exception const&) {
      }
    }
    return answers;
  };
  using got = std::vector<std::optional<answer>>;
  // Bound to a CPU each, each guessing "shared": not shared, and polling as ranks with a core.
  BOOST_TEST((run({{0}, true}, {{1}, true}, true) == got{answer{false, own}, answer{false, own}}));
  // The same CPU for both, each guessing "not shared": shared.
  BOOST_TEST(
      (run({{0}, false}, {{0}, false}, true) == got{answer{true, shared}, answer{true, shared}}));
  // GCL_SPIN_US set (spin_follows_cores false): the judgement, but not the polling, changes.
  BOOST_TEST(
      (run({{0}, true}, {{1}, true}, false) == got{answer{false, shared}, answer{false, shared}}));
  // Rank 1's CPUs not known: the machine is not judged, and each guess stands (rank 1 says
  // shared, so every rank learns that some rank shares cores).
  BOOST_TEST((run({{0}, false}, {{}, true}, true) == got{answer{true, own}, answer{true, shared}}));
}

// A fork (the lane of a communicator's non-blocking collectives, here of some of its ranks)
// keeps the job's judgement of its ranks' cores: four ranks on CPUs 0, 0, 1 and 1 share cores;
// ranks 0 and 2 alone, on CPUs 0 and 1, would look like a core each.
BOOST_AUTO_TEST_CASE(a_fork_of_some_ranks_keeps_the_jobs_judgement_of_their_cores) {
  auto opts = quick(10s);
  opts.spin_follows_cores = true;
  opts.cpus = {0};
  tcp_transport::group g(4, opts);
  std::array<int, 2> const members{0, 2};
  std::barrier lane_sync(2);
  std::array<std::byte, 256> carried{};  // lane rank 0's broadcast
  std::vector<int> job_says(4, -1), lane_says(2, -1);
  std::vector<std::string> errors(4);
  {
    std::vector<std::jthread> ranks;
    for (int r = 0; r < 4; ++r)
      ranks.emplace_back([&, r] {
        try {
          auto o = g.options();
          o.rank = r;
          o.cpus = {r / 2};
          auto t = r == 0 ? g.connect(0) : tcp_transport(o);
          job_says[static_cast<std::size_t>(r)] = t.ranks_share_cores() ? 1 : 0;
          if (r % 2 != 0) return;
          gcl::fork_bootstrap b;
          b.rank = r / 2;
          b.size = 2;
          b.members = members;
          b.broadcast = [&, lane_rank = r / 2](std::span<std::byte> bytes) {
            if (bytes.size() > carried.size()) throw std::length_error("broadcast too large");
            if (lane_rank == 0) std::copy(bytes.begin(), bytes.end(), carried.begin());
            lane_sync.arrive_and_wait();
            if (lane_rank != 0) std::copy_n(carried.begin(), bytes.size(), bytes.begin());
          };
          b.barrier = [&] { lane_sync.arrive_and_wait(); };
          auto lane = t.fork(b);
          lane_says[static_cast<std::size_t>(r / 2)] =
              (lane.ranks_share_cores() ? 1 : 0) |
              (lane.config().spin == gcl::tcp_options::shared_core_spin ? 2 : 0);
        } catch (std::exception const& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
  }
  BOOST_TEST(errors == std::vector<std::string>(4), boost::test_tools::per_element());
  BOOST_TEST(job_says == std::vector<int>(4, 1), boost::test_tools::per_element());
  BOOST_TEST(lane_says == std::vector<int>(2, 3), boost::test_tools::per_element());
}

// What the system chooses for new TCP connections ("" where /proc does not say).
std::string system_congestion_control() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  std::getline(f, name);
  return name;
}

BOOST_AUTO_TEST_CASE(connections_within_a_host_use_the_same_host_congestion_control) {
  // Each rank's view of its connections: "peer=algorithm" per peer, itself included ("").
  auto views = [](gcl::tcp_options o) {
    return gcl::spawn<tcp_transport>(
        3,
        [](auto& comm) {
          std::string view;
          for (int p = 0; p < comm.size(); ++p)
            view += std::to_string(p) + "=" + comm.transport().congestion_control(p) + " ";
          std::vector<int> v{comm.rank()};
          gcl::all_reduce(comm, v);  // data still flows
          expect(v[0] == 3, "all_reduce gave " + std::to_string(v[0]));
          return view;
        },
        o);
  };
  BOOST_TEST(views(quick()) == (std::vector<std::string>{"0= 1=reno 2=reno ", "0=reno 1= 2=reno ",
                                                         "0=reno 1=reno 2= "}));
  auto o = quick();
  o.same_host_congestion_control.clear();  // the system's choice
  auto const sys = system_congestion_control();
  if (!sys.empty()) BOOST_TEST(views(o)[1] == "0=" + sys + " 1= 2=" + sys + " ");
  check_rank_failures();
}

BOOST_AUTO_TEST_CASE(a_congestion_control_the_kernel_refuses_is_named_before_the_rendezvous) {
  auto o = quick(2s);
  o.same_host_congestion_control = "nosuchcc";
  o.size = 2;  // rank 1 never comes: the error must not wait for it
  o.master_port = 1;
  o.rank = 1;
  BOOST_CHECK_EXCEPTION(tcp_transport{o}, gcl::usage_error, [](auto const& e) {
    return contains(e.what(), "'nosuchcc'") && contains(e.what(), "no such algorithm") &&
           contains(e.what(), "GCL_SAME_HOST_CONGESTION");
  });
}

BOOST_AUTO_TEST_CASE(rendezvous_times_out_naming_address_and_missing_ranks) {
  auto o = quick(300ms);
  tcp_transport::group g(3, o);
  try {
    g.connect(0);  // ranks 1 and 2 never come
    BOOST_FAIL("no timeout");
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::timeout));
    BOOST_TEST(contains(e.what(), "ranks 1, 2"), e.what());
    BOOST_TEST(contains(e.what(), "127.0.0.1:" + std::to_string(g.options().master_port)),
               e.what());
  }
  gcl::tcp_options lone;
  lone.rank = 1;
  lone.size = 2;
  lone.master_port = 1;
  lone.timeout = 300ms;
  try {
    tcp_transport t(lone);
    BOOST_FAIL("no timeout");
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::timeout));
    BOOST_TEST(contains(e.what(), "could not connect to rank 0 at 127.0.0.1:1"), e.what());
  }
}

BOOST_AUTO_TEST_CASE(bad_interface_or_bind_address_is_named) {
  gcl::tcp_options o;
  o.timeout = 2s;
  o.interface_name = "nosuchif9";
  try {
    tcp_transport t(o);
    BOOST_FAIL("no error");
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::connection_refused));
    BOOST_TEST(contains(e.what(), "'nosuchif9'"), e.what());
  }
  o.interface_name.clear();
  o.bind_address = "eth0";
  BOOST_CHECK_EXCEPTION(tcp_transport{o}, gcl::usage_error, [](auto const& e) {
    return contains(e.what(), "bind address 'eth0' is not an IP address");
  });
  o.bind_address = "127.0.0.1";  // a valid one works, and port() reports the port
  tcp_transport t(o);
  BOOST_TEST(t.port() != 0);
  BOOST_TEST(t.size() == 1);
}

BOOST_AUTO_TEST_CASE(from_env_reads_gcl_then_common_then_launcher_variables) {
  auto env = [](std::map<std::string, std::string> m) {
    return [m](char const* n) -> char const* {
      auto it = m.find(n);
      return it == m.end() ? nullptr : it->second.c_str();
    };
  };
  auto o = gcl::tcp_options::from_env(env({{"GCL_RANK", "2"},
                                           {"GCL_WORLD_SIZE", "4"},
                                           {"GCL_MASTER_ADDR", "10.0.0.1"},
                                           {"GCL_MASTER_PORT", "29500"},
                                           {"GCL_TOKEN", "t"},
                                           {"GCL_TIMEOUT", "1.5"},
                                           {"GCL_SPIN_US", "40"},
                                           {"RANK", "3"}}));
  BOOST_TEST(o.rank == 2);
  BOOST_TEST(o.size == 4);
  BOOST_TEST(o.master_addr == "10.0.0.1");
  BOOST_TEST(o.master_port == 29500);
  BOOST_TEST(o.token == "t");
  BOOST_TEST(o.timeout.count() == 1500);
  BOOST_TEST(o.spin.count() == 40);

  o = gcl::tcp_options::from_env(env({{"OMPI_COMM_WORLD_RANK", "1"},
                                      {"OMPI_COMM_WORLD_SIZE", "2"},
                                      {"MASTER_ADDR", "h"},
                                      {"MASTER_PORT", "1234"}}));
  BOOST_TEST(o.rank == 1);
  BOOST_TEST(o.size == 2);
  BOOST_TEST(o.master_addr == "h");
  BOOST_TEST(o.spin.count() == 0);  // nothing says how many ranks share the host: no polling
  // Polling by default where each rank has a core of its own (bound by the launcher, or no
  // more ranks on this host than CPUs this process may use), longer where the launcher says
  // they share cores, none where nothing says.
  std::map<std::string, std::string> const job{
      {"GCL_RANK", "0"}, {"GCL_WORLD_SIZE", "1"}, {"GCL_MASTER_ADDR", "h"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(job.begin(), job.end());
    return gcl::tcp_options::from_env(env(extra)).spin;
  };
  auto const cpus = std::to_string(gcl::tcp_options::usable_cpus());
  auto const too_many = std::to_string(gcl::tcp_options::usable_cpus() + 1);
  BOOST_TEST((with({{"GCL_BOUND_CPU", "1"}}) == gcl::tcp_options::default_spin));
  BOOST_TEST((with({{"GCL_BOUND_CPU", ""}}) == std::chrono::microseconds{0}));
  BOOST_TEST((with({{"LOCAL_WORLD_SIZE", cpus}}) == gcl::tcp_options::default_spin));
  BOOST_TEST((with({{"LOCAL_WORLD_SIZE", too_many}}) == gcl::tcp_options::shared_core_spin));
  BOOST_TEST((with({{"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}) == gcl::tcp_options::default_spin));
  BOOST_TEST((with({{"MPI_LOCALNRANKS", too_many}}) == gcl::tcp_options::shared_core_spin));
  BOOST_TEST((with({{"GCL_BOUND_CPU", "0"}, {"GCL_SPIN_US", "7"}}).count() == 7));
  BOOST_CHECK_THROW(with({{"LOCAL_WORLD_SIZE", "two"}}), gcl::usage_error);
  o = gcl::tcp_options::from_env(env({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}));
  BOOST_TEST(o.size == 1);
  o = gcl::tcp_options::from_env(env({{"PMI_RANK", "3"},
                                      {"PMI_SIZE", "5"},
                                      {"MASTER_ADDR", "h"},
                                      {"MASTER_PORT", "1"},
                                      {"GCL_ADDRESS_FAMILY", "6"}}));
  BOOST_TEST(o.rank == 3);
  BOOST_TEST((o.family == gcl::address_family::v6));

  auto fails = [&](std::map<std::string, std::string> m, std::string const& part) {
    try {
      gcl::tcp_options::from_env(env(m));
    } catch (gcl::usage_error const& e) {
      BOOST_TEST(contains(e.what(), part), e.what());
      return;
    }
    BOOST_FAIL("no usage_error for " + part);
  };
  fails({}, "GCL_WORLD_SIZE");
  fails({{"WORLD_SIZE", "2"}}, "GCL_RANK");
  fails({{"WORLD_SIZE", "2"}, {"RANK", "2"}}, "RANK='2'");
  fails({{"WORLD_SIZE", "x"}, {"RANK", "0"}}, "WORLD_SIZE='x'");
  fails({{"WORLD_SIZE", "2"}, {"RANK", "0"}}, "GCL_MASTER_ADDR");
  fails({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "a"}}, "GCL_MASTER_PORT");
  fails({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "99999"}},
        "MASTER_PORT='99999'");
  fails({{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"GCL_TIMEOUT", "-1"}}, "GCL_TIMEOUT='-1'");
  fails({{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"GCL_ADDRESS_FAMILY", "7"}}, "GCL_ADDRESS_FAMILY");
  fails({{"WORLD_SIZE", "1"}, {"RANK", "0"}, {"GCL_SPIN_US", "-5"}}, "GCL_SPIN_US='-5'");
}

BOOST_AUTO_TEST_CASE(ipv6_loopback) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor probe(io);
  boost::system::error_code ec;
  probe.open(boost::asio::ip::tcp::v6(), ec);
  if (!ec) probe.bind({boost::asio::ip::address_v6::loopback(), 0}, ec);
  if (ec) {
    BOOST_TEST_MESSAGE("no IPv6 loopback here: skipped");
    return;
  }
  auto o = quick();
  o.family = gcl::address_family::v6;
  gcl::spawn<tcp_transport>(
      3,
      [](auto& comm) {
        expect(contains(comm.transport().config().master_addr, "::1"),
               comm.transport().config().master_addr);
        int me = comm.rank();
        comm.send((me + 1) % 3, me * 10);
        expect(comm.template recv<int>((me + 2) % 3) == (me + 2) % 3 * 10, "wrong value");
      },
      o);
  check_rank_failures();
}
