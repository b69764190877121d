#define BOOST_TEST_MODULE nonblocking
// Non-blocking collectives (collective/nonblocking.hpp): every one of them, all outstanding at
// once and waited in reverse order, gives what its blocking form gives; several on two
// communicators of a 2 x 3 grid at once; completion in start order; progress while the caller
// never looks; point-to-point calls in between (the MPI program that a serial progress engine
// would deadlock); errors from wait(): a mismatch, and a rank that died before the collective.
// Over inproc, counting<inproc>, shm (threads) and, built with GCL_TEST_TCP, TCP and hybrid
// (two pretend hosts); world sizes 1-8. Ranks report to the main thread, which asserts (Boost.Test
// is not thread-safe).
#include <boost/test/unit_test.hpp>

#include <gcl/gcl.hpp>
#include <gcl/transport/shm.hpp>
#if defined(GCL_TEST_TCP)
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/tcp.hpp>
#endif

#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/every_transport.hpp"

namespace {

constexpr int world_sizes[] = {1, 2, 3, 4, 5, 7, 8};

// Runs f(comm) -> std::string on p ranks over every transport; returns the first complaint.
template <class F>
std::string everywhere(int p, F f) {
  return gcl_test::on_every_transport(p, f, std::chrono::seconds{60});
}

int value(int rank, std::size_t i) {
  return (rank + 1) * static_cast<int>(i % 13 + 1) + int(i % 5);
}
std::vector<int> data(int rank, std::size_t n) {
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(rank, i);
  return v;
}

// Every collective, blocking (NB false) or all started before any is waited for (NB true),
// with sizes that include 0 and per-rank counts that include 0; the buffers in call order.
// Between the starts and the waits, a ring of blocking sendrecvs on the same communicator.
template <bool NB, class Comm>
std::deque<std::vector<int>> every_collective(Comm& comm, std::size_t n) {
  int const p = comm.size(), me = comm.rank();
  auto const up = static_cast<std::size_t>(p);
  std::deque<std::vector<int>> b;  // a deque: references to its elements stay valid
  std::vector<gcl::collective_request> requests;
  auto buffer = [&](std::vector<int> v) -> std::vector<int>& {
    return b.emplace_back(std::move(v));
  };
  int scalar = me + 1;
  std::vector<std::size_t> counts(up), send_counts(up), recv_counts(up);
  for (std::size_t r = 0; r < up; ++r) {
    counts[r] = (r % 3) * n / 2;  // rank 0 (and every third) has 0
    send_counts[r] = (static_cast<std::size_t>(me) + r) % 3;
    recv_counts[r] = (r + static_cast<std::size_t>(me)) % 3;
  }
  std::size_t const total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::size_t const sent = std::accumulate(send_counts.begin(), send_counts.end(), std::size_t{0});
  std::size_t const received =
      std::accumulate(recv_counts.begin(), recv_counts.end(), std::size_t{0});
  int const last = p - 1, middle = p / 2;
#define GCL_BOTH(name, ...)                                              \
  do {                                                                   \
    if constexpr (NB)                                                    \
      requests.push_back(gcl::i##name(comm __VA_OPT__(, ) __VA_ARGS__)); \
    else                                                                 \
      gcl::name(comm __VA_OPT__(, ) __VA_ARGS__);                        \
  } while (false)
  GCL_BOTH(all_reduce, buffer(data(me, n)), gcl::sum{});
  GCL_BOTH(all_reduce, buffer(data(me, n)), gcl::max{}, gcl::ring{});
  auto const& in = buffer(data(me, n));
  GCL_BOTH(all_reduce, in, buffer(std::vector<int>(n)), gcl::sum{}, gcl::tree{});
  GCL_BOTH(all_reduce, scalar);
  GCL_BOTH(reduce, buffer(data(me, n)), last, gcl::sum{});
  GCL_BOTH(reduce, in, buffer(std::vector<int>(n)), 0, gcl::min{});
  GCL_BOTH(broadcast, buffer(data(me, n)), middle);
  GCL_BOTH(broadcast, in, buffer(std::vector<int>(n)), last);
  GCL_BOTH(scan, buffer(data(me, n)), gcl::sum{});
  GCL_BOTH(exscan, buffer(data(me, n)), gcl::sum{});
  GCL_BOTH(all_gather, in, buffer(std::vector<int>(n * up)));
  GCL_BOTH(gather, in, buffer(std::vector<int>(n * up)), middle);
  GCL_BOTH(scatter, buffer(data(me, n * up)), buffer(std::vector<int>(n)), last);
  GCL_BOTH(all_to_all, buffer(data(me, n * up)), buffer(std::vector<int>(n * up)));
  auto const& spread = buffer(data(me, n * up));
  GCL_BOTH(reduce_scatter, spread,
           buffer(std::vector<int>(gcl::reduce_scatter_size(n * up, me, p))), gcl::sum{});
  GCL_BOTH(gatherv, buffer(data(me, counts[static_cast<std::size_t>(me)])),
           buffer(std::vector<int>(total)), counts, last);
  GCL_BOTH(scatterv, buffer(data(me, total)), buffer(std::vector<int>(counts[std::size_t(me)])),
           counts, 0);
  GCL_BOTH(all_gatherv, buffer(data(me, counts[static_cast<std::size_t>(me)])),
           buffer(std::vector<int>(total)), counts);
  GCL_BOTH(all_to_allv, buffer(data(me, sent)), send_counts, buffer(std::vector<int>(received)),
           recv_counts);
  GCL_BOTH(reduce_scatterv, buffer(data(me, total)),
           buffer(std::vector<int>(counts[static_cast<std::size_t>(me)])), counts, gcl::sum{});
  GCL_BOTH(barrier);
#undef GCL_BOTH
  // The user's own messages while the collectives are outstanding: they never meet.
  std::vector<int> from_left(n);
  comm.sendrecv((me + 1) % p, data(me, n), (me + p - 1) % p, from_left);
  b.push_back(from_left);
  for (auto r = requests.rbegin(); r != requests.rend(); ++r) r->wait();
  b.push_back({scalar});
  return b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_collective_gives_what_its_blocking_form_gives) {
  for (int p : world_sizes)
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{1000}}) {
      auto e = everywhere(p, [n](auto& comm) -> std::string {
        auto const want = every_collective<false>(comm, n);
        auto const got = every_collective<true>(comm, n);
        if (got.size() != want.size()) return "different numbers of buffers";
        for (std::size_t i = 0; i < want.size(); ++i)
          if (got[i] != want[i])
            return "n=" + std::to_string(n) + ": buffer " + std::to_string(i) +
                   " differs from the blocking call's";
        // And the blocking call's is right where it is easy to say: the sum of all ranks.
        auto const& sum = got.front();
        for (std::size_t i = 0; i < sum.size(); ++i) {
          int w = 0;
          for (int r = 0; r < comm.size(); ++r) w += value(r, i);
          if (sum[i] != w) return "all_reduce element " + std::to_string(i);
        }
        return "";
      });
      BOOST_TEST(e.empty(), e);
    }
}

BOOST_AUTO_TEST_CASE(two_communicators_of_a_grid_at_once) {
  auto e = everywhere(6, [](auto& comm) -> std::string {
    int const r = comm.rank(), cols = 3;
    auto row = comm.split(r / cols, r % cols);
    auto col = comm.split(r % cols, r / cols);
    if (!row || !col) return "no row or column communicator";
    std::size_t const n = 20000;  // large enough for several rounds of every algorithm
    auto a = data(r, n), b = data(r, n), whole = data(r, n), x = data(r, n);
    // Outstanding on three communicators at once, waited for in another order.
    auto on_row = gcl::iall_reduce(*row, a, gcl::sum{}, gcl::ring{});
    auto on_col = gcl::iall_reduce(*col, b, gcl::sum{});
    auto on_all = gcl::iall_reduce(comm, whole, gcl::sum{});
    on_all.wait();
    on_col.wait();
    on_row.wait();
    // Rows then columns, each non-blocking, equal the whole job's sum.
    gcl::iall_reduce(*row, x, gcl::sum{}).wait();
    gcl::iall_reduce(*col, x, gcl::sum{}, gcl::tree{}).wait();
    for (std::size_t i = 0; i < n; ++i) {
      int row_sum = 0, col_sum = 0, all = 0;
      for (int q = 0; q < 6; ++q) {
        all += value(q, i);
        if (q / cols == r / cols) row_sum += value(q, i);
        if (q % cols == r % cols) col_sum += value(q, i);
      }
      if (a[i] != row_sum || b[i] != col_sum || whole[i] != all || x[i] != all)
        return "element " + std::to_string(i) + ": row " + std::to_string(a[i]) + " (want " +
               std::to_string(row_sum) + "), column " + std::to_string(b[i]) + " (want " +
               std::to_string(col_sum) + "), whole " + std::to_string(whole[i]) +
               ", rows then columns " + std::to_string(x[i]) + " (want " + std::to_string(all) +
               ")";
    }
    return "";
  });
  BOOST_TEST(e.empty(), e);
}

BOOST_AUTO_TEST_CASE(they_complete_in_the_order_they_were_started) {
  for (int p : {2, 3, 4}) {
    auto e = everywhere(p, [](auto& comm) -> std::string {
      std::vector<std::vector<int>> bufs;
      for (int i = 0; i < 8; ++i) bufs.push_back(data(comm.rank(), i % 2 ? 10 : 200000));
      std::vector<gcl::collective_request> rs;
      for (auto& v : bufs) rs.push_back(gcl::iall_reduce(comm, v, gcl::sum{}));
      // When the last has finished, so have all before it, whatever their sizes.
      rs.back().wait();
      for (std::size_t i = 0; i + 1 < rs.size(); ++i)
        if (!rs[i].test()) return "request " + std::to_string(i) + " not done after the last";
      return "";
    });
    BOOST_TEST(e.empty(), e);
  }
}

BOOST_AUTO_TEST_CASE(progress_needs_no_test_and_no_wait) {
  auto e = everywhere(3, [](auto& comm) -> std::string {
    auto v = data(comm.rank(), 1 << 20);  // 4 MiB
    auto r = gcl::iall_reduce(comm, v, gcl::sum{});
    // run_time() only reads the request's state: nothing here drives the collective.
    auto const give_up = std::chrono::steady_clock::now() + std::chrono::seconds{120};
    while (r.run_time() == std::chrono::steady_clock::duration{})
      if (std::chrono::steady_clock::now() > give_up)
        return "never finished by itself";
      else
        std::this_thread::sleep_for(std::chrono::milliseconds{5});
    if (!r.test()) return "finished, but test() says no";
    return "";
  });
  BOOST_TEST(e.empty(), e);
}

// Legal in MPI: rank 0 starts the all_reduce and then sends; rank 1 receives before it starts
// the all_reduce. A progress engine that ran rank 0's calls one after another would wait for
// ever on rank 1. (The communicator's first non-blocking call forms its lane, a collective
// call: here the barrier.)
BOOST_AUTO_TEST_CASE(point_to_point_between_start_and_wait_cannot_deadlock) {
  for (int p : {2, 3, 5}) {
    auto e = everywhere(p, [](auto& comm) -> std::string {
      int const me = comm.rank();
      gcl::ibarrier(comm).wait();
      auto v = data(me, 50000);
      gcl::collective_request r;
      if (me == 0) {
        r = gcl::iall_reduce(comm, v, gcl::sum{});
        comm.send(1, 42);
      } else {
        if (me == 1 && comm.template recv<int>(0) != 42) return "wrong message";
        r = gcl::iall_reduce(comm, v, gcl::sum{});
      }
      r.wait();
      for (std::size_t i = 0; i < v.size(); ++i) {
        int w = 0;
        for (int q = 0; q < comm.size(); ++q) w += value(q, i);
        if (v[i] != w) return "element " + std::to_string(i);
      }
      return "";
    });
    BOOST_TEST(e.empty(), e);
  }
}

BOOST_AUTO_TEST_CASE(forming_the_lane_is_one_broadcast_and_one_barrier_on_the_communicator) {
  for (int p : world_sizes) {
    auto complaints = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      std::vector<int> v(100, 1);
      gcl::iall_reduce(comm, v, gcl::sum{}).wait();
      auto const after_first = comm.stats().messages_sent;
      for (int i = 0; i < 5; ++i) gcl::iall_reduce(comm, v, gcl::sum{}).wait();
      if (comm.stats().messages_sent != after_first)
        return std::string("the later calls sent messages on the communicator's own channels");
      if (comm.collective_count() != 2)
        return "collectives on the communicator: " + std::to_string(comm.collective_count());
      int want = 1;
      for (int i = 0; i < 6; ++i) want *= comm.size();
      if (v[0] != want) return "sum " + std::to_string(v[0]) + ", want " + std::to_string(want);
      return std::string();
    });
    for (int r = 0; r < p; ++r)
      BOOST_TEST(complaints[std::size_t(r)].empty(), complaints[std::size_t(r)]);
  }
}

namespace {

struct outcome {
  bool threw = false;
  gcl::errc code{};
  std::string what;
};

outcome outcome_of(gcl::collective_request& r) {
  try {
    r.wait();
  } catch (gcl::transport_error const& e) {
    return {true, static_cast<gcl::errc>(e.code().value()), e.what()};
  } catch (std::exception const& e) {
    return {true, gcl::errc{}, std::string("not a transport_error: ") + e.what()};
  }
  return {};
}

// Runs f(comm, outcomes[rank]) on 3 ranks of Transport; the job's own error, if spawn throws
// one, is not the point here (what each rank's wait() threw is).
template <class Transport, class F>
std::vector<std::vector<outcome>> outcomes(F f, typename Transport::options o = {}) {
  std::vector<std::vector<outcome>> seen(3);
  try {
    gcl::spawn<Transport>(
        3, [&](auto& comm) { f(comm, seen[std::size_t(comm.rank())]); }, o);
  } catch (std::exception const&) {
  }
  return seen;
}

template <class Transport>
void check_mismatch(typename Transport::options o, char const* over) {
  BOOST_TEST_CONTEXT(over) {
    auto seen = outcomes<Transport>(
        [](auto& comm, std::vector<outcome>& mine) {
          std::vector<int> v(comm.rank() == 0 ? 10 : 11, 1), w(5, 1);
          auto first = gcl::iall_reduce(comm, v, gcl::sum{});
          auto second = gcl::iall_reduce(comm, w, gcl::sum{});
          mine.push_back(outcome_of(first));
          mine.push_back(outcome_of(second));
        },
        o);
    int mismatches = 0;
    for (int r = 0; r < 3; ++r) {
      auto const& m = seen[std::size_t(r)];
      BOOST_TEST_REQUIRE(m.size() == 2u);
      BOOST_TEST(m[0].threw, "rank " << r << ": wait() returned");
      BOOST_TEST((m[0].code == gcl::errc::mismatch || m[0].code == gcl::errc::aborted),
                 "rank " << r << ": " << m[0].what);
      mismatches += m[0].code == gcl::errc::mismatch;
      // The one started after it: the same error, not a success and not another story.
      BOOST_TEST(m[1].threw, "rank " << r << ": the later wait() returned");
      BOOST_TEST(m[1].what == m[0].what);
    }
    BOOST_TEST(mismatches >= 1);
    bool named = false;
    for (auto const& m : seen) named = named || m[0].what.find("10") != std::string::npos;
    BOOST_TEST(named, "no message names the count 10");
  }
}

// Rank 2 fails before the collective the others are in: theirs is released by wait().
template <class Transport>
void check_dead_rank(typename Transport::options o, char const* over) {
  BOOST_TEST_CONTEXT(over) {
    auto seen = outcomes<Transport>(
        [](auto& comm, std::vector<outcome>& mine) {
          gcl::ibarrier(comm).wait();  // the lane is formed on every rank
          // Rank 2 dies once the others are out of the barrier (the last rank out of a barrier
          // may leave while the others still wait for their last message: an abort then would
          // fail their barrier, not the collective this is about).
          if (comm.rank() == 2) {
            (void)comm.template recv<int>(0);
            (void)comm.template recv<int>(1);
            throw std::runtime_error("rank 2 ran out of memory");
          }
          comm.send(2, 1);
          std::vector<int> v(100000, 1);
          auto r = gcl::iall_reduce(comm, v, gcl::sum{});
          mine.push_back(outcome_of(r));
        },
        o);
    for (int r = 0; r < 2; ++r) {
      auto const& m = seen[std::size_t(r)];
      BOOST_TEST_REQUIRE(m.size() == 1u);
      BOOST_TEST(m[0].threw, "rank " << r << ": wait() returned");
      BOOST_TEST((m[0].code == gcl::errc::aborted || m[0].code == gcl::errc::peer_closed),
                 "rank " << r << ": " << m[0].what);
      BOOST_TEST(m[0].what.find("rank 2") != std::string::npos, m[0].what);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_mismatch_is_thrown_by_wait_and_fails_the_later_ones) {
  check_mismatch<gcl::inproc_transport>({.timeout = std::chrono::seconds{60}}, "inproc");
  gcl::shm_options s;
  s.timeout = std::chrono::seconds{60};
  check_mismatch<gcl::shm_transport>(s, "shm");
#if defined(GCL_TEST_TCP)
  gcl::tcp_options t;
  t.timeout = std::chrono::seconds{60};
  check_mismatch<gcl::tcp_transport>(t, "tcp");
#endif
}

BOOST_AUTO_TEST_CASE(a_rank_that_dies_releases_the_others_wait) {
  check_dead_rank<gcl::inproc_transport>({.timeout = std::chrono::seconds{60}}, "inproc");
  gcl::shm_options s;
  s.timeout = std::chrono::seconds{60};
  check_dead_rank<gcl::shm_transport>(s, "shm");
#if defined(GCL_TEST_TCP)
  gcl::tcp_options t;
  t.timeout = std::chrono::seconds{60};
  check_dead_rank<gcl::tcp_transport>(t, "tcp");
  gcl::hybrid_options h;
  h.tcp.timeout = std::chrono::seconds{60};
  h.test_hosts = {0, 1, 0};
  check_dead_rank<gcl::hybrid_transport>(h, "hybrid");
#endif
}

namespace {
std::mutex warnings_mutex;
std::vector<std::string> warnings;
void record_warning(gcl::log_level level, std::string_view message) noexcept {
  if (level != gcl::log_level::warning) return;
  std::lock_guard lock(warnings_mutex);
  warnings.emplace_back(message);
}
}  // namespace

// A request dropped without wait() waits for its collective (its buffer is still being
// written) and does not let a failure pass unseen: it is logged.
BOOST_AUTO_TEST_CASE(a_dropped_request_waits_and_logs_its_failure) {
  auto const previous = gcl::set_log_handler(&record_warning);
  std::vector<std::string> complaints(2);
  try {
    gcl::spawn<gcl::inproc_transport>(2,
                                      [&](auto& comm) {
                                        std::vector<int> good(1000, 1);
                                        {
                                          auto r = gcl::iall_reduce(comm, good, gcl::sum{});
                                        }  // dropped: waits
                                        if (good[999] != 2)
                                          complaints[std::size_t(comm.rank())] = "not waited for";
                                        std::vector<int> bad(comm.rank() == 0 ? 3 : 4, 1);
                                        {
                                          auto r = gcl::iall_reduce(comm, bad, gcl::sum{});
                                        }  // dropped: fails
                                      },
                                      {.timeout = std::chrono::seconds{60}});
  } catch (std::exception const&) {
  }
  gcl::set_log_handler(previous);
  for (auto const& c : complaints) BOOST_TEST(c.empty(), c);
  std::lock_guard lock(warnings_mutex);
  BOOST_TEST_REQUIRE(!warnings.empty());
  BOOST_TEST(
      warnings.front().find("all_reduce failed and its request was dropped without wait()") !=
          std::string::npos,
      warnings.front());
}
