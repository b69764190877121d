#define BOOST_TEST_MODULE algorithm_ring
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/detail/chunk.hpp>

#include "accounting.hpp"
#include "recording.hpp"

using namespace accounting;
namespace d = gcl::detail;

BOOST_AUTO_TEST_CASE(all_reduce_schedule_is_the_homeworks) {
  for (int N = 1; N <= 12; ++N)
    for (int n = 0; n < N; ++n) {
      // Step 1: worker n sends chunk (n - 1) mod N to its left neighbour.
      BOOST_TEST(d::ring_send_chunk(n, 1, N, -1) == ((n - 1) % N + N) % N);
      // In general c = (n + i - 2) mod N at step i, in both phases (2 (N - 1) steps).
      for (int i = 1; i <= 2 * (N - 1); ++i) {
        BOOST_TEST(d::ring_send_chunk(n, i, N, -1) == ((n + i - 2) % N + N) % N);
        // What n receives at step i is what it sends at step i + 1: "sends its next chunk".
        BOOST_TEST(d::ring_recv_chunk(n, i, N, -1) == d::ring_send_chunk(n, i + 1, N, -1));
      }
      // After phase I worker n holds reduced chunk (n - 2) mod N; for N = 4 the homework's
      // (n + 2) mod N.
      if (N > 1) BOOST_TEST(d::ring_recv_chunk(n, N - 1, N, -1) == ((n - 2) % N + N) % N);
      if (N == 4) BOOST_TEST(d::ring_recv_chunk(n, N - 1, N, -1) == (n + 2) % N);
    }
  // Phase I covers every chunk but one at each worker: each chunk is reduced exactly once.
  for (int N = 2; N <= 12; ++N)
    for (int n = 0; n < N; ++n) {
      std::vector<int> seen(N, 0);
      for (int i = 1; i <= N - 1; ++i) ++seen[d::ring_recv_chunk(n, i, N, -1)];
      for (int c = 0; c < N; ++c) BOOST_TEST(seen[c] == (c == ((n - 1) % N + N) % N ? 0 : 1));
    }
}

BOOST_AUTO_TEST_CASE(chunk_layout_is_uneven_in_front) {
  for (std::size_t count : {0u, 1u, 3u, 4u, 5u, 10u, 37u, 1000u})
    for (int p = 1; p <= 9; ++p) {
      d::chunk_layout l{count, p};
      std::size_t at = 0;
      for (int c = 0; c < p; ++c) {
        BOOST_TEST(l.offset(c) == at);
        BOOST_TEST(l.size(c) == count / p + (static_cast<std::size_t>(c) < count % p ? 1 : 0));
        at += l.size(c);
      }
      BOOST_TEST(at == count);
      BOOST_TEST(l.offset(p) == count);
    }
}

BOOST_AUTO_TEST_CASE(all_reduce_sends_2_p_minus_1_chunks_per_rank_in_2_p_minus_1_rounds) {
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n : counts_for(p)) {
      auto r = run<std::int64_t>(p, n, gcl::sum{}, gcl::ring{}, value);
      auto e = expected_sum<std::int64_t>(p, n, value);
      for (int k = 0; k < p; ++k)
        BOOST_TEST(r.data[k] == e, "P=" << p << " n=" << n << " rank " << k);
      auto const P = static_cast<std::uint64_t>(p);
      // Empty chunks are sent too, so the count never depends on n.
      BOOST_TEST(r.total.messages_sent == 2 * P * (P - 1), "P=" << p << " n=" << n);
      for (int k = 0; k < p; ++k) BOOST_TEST(r.per_rank[k].messages_sent == 2 * (P - 1));
      // Every chunk travels P - 1 hops in each phase.
      BOOST_TEST(r.total.bytes_sent == 2 * (P - 1) * n * sizeof(std::int64_t));
      BOOST_TEST(r.total.rounds == 2 * (p - 1));
      // Rank k sends every chunk but (k-2) mod P in phase I and every chunk but (k-3) mod P in
      // phase II (doc/algorithms.md).
      d::chunk_layout const l{n, p};
      for (int k = 0; k < p && p > 1; ++k)
        BOOST_TEST(r.per_rank[k].bytes_sent ==
                       (2 * n - l.size(d::mod(k - 2, p)) - l.size(d::mod(k - 3, p))) *
                           sizeof(std::int64_t),
                   "P=" << p << " n=" << n << " rank " << k);
      if (p > 1) {
        BOOST_TEST(r.total.max_message_bytes == (n + P - 1) / P * sizeof(std::int64_t));
        BOOST_TEST(r.total.min_message_bytes == n / P * sizeof(std::int64_t));
      }
    }
}

BOOST_AUTO_TEST_CASE(commutative_user_op_and_bit_identical_floats) {
  auto add = gcl::commutative([](std::int64_t a, std::int64_t b) { return a + b; });
  for (int p : {2, 3, 7}) {
    auto r = run<std::int64_t>(p, 100, add, gcl::ring{}, value);
    auto e = expected_sum<std::int64_t>(p, 100, value);
    for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e);
  }
  // Each chunk is reduced once and then copied, so every rank gets the same bits.
  for (int p : {3, 5, 8}) {
    auto r = run<float>(p, 333, gcl::sum{}, gcl::ring{}, [](int k, std::size_t i) {
      return 0.1f * static_cast<float>(k) + 1e-3f * i;
    });
    for (int k = 1; k < p; ++k) BOOST_TEST((r.data[k] == r.data[0]));
  }
}

BOOST_AUTO_TEST_CASE(reduce_scatter_and_all_gather_counts) {
  for (int p = 1; p <= 9; ++p)
    for (std::size_t n : counts_for(p)) {
      auto const P = static_cast<std::uint64_t>(p);
      auto rs = counted_run(p, [&](auto& comm) {
        std::vector<int> in(n, 1), out(gcl::reduce_scatter_size(n, comm.rank(), p));
        gcl::reduce_scatter(comm, in, out, gcl::sum{}, gcl::ring{});
      });
      BOOST_TEST(rs.messages_sent == P * (P - 1));
      BOOST_TEST(rs.bytes_sent == (P - 1) * n * sizeof(int));
      BOOST_TEST(rs.rounds == p - 1);
      auto ag = counted_run(p, [&](auto& comm) {
        std::vector<int> in(n, comm.rank()), out(n * p);
        gcl::all_gather(comm, in, out, gcl::ring{});
      });
      BOOST_TEST(ag.messages_sent == P * (P - 1));
      BOOST_TEST(ag.bytes_sent == P * (P - 1) * n * sizeof(int));
      BOOST_TEST(ag.rounds == p - 1);
    }
}

BOOST_AUTO_TEST_CASE(the_ring_really_runs_the_homework_schedule) {
  // With count == N every chunk is one element, and x_n[c] = c + 1 on every rank. At phase-I
  // step i the sender's chunk c holds i contributions, (c + 1) i; in phase II the full sum
  // (c + 1) N. So the first element of each message names its chunk.
  for (int N = 2; N <= 9; ++N) {
    auto logs = recording::run(N, [N](auto& comm) {
      std::vector<std::int64_t> v(N);
      for (int c = 0; c < N; ++c) v[c] = c + 1;
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
    });
    for (int n = 0; n < N; ++n) {
      BOOST_TEST_REQUIRE(logs[n].size() == 2u * (N - 1));
      for (int i = 1; i <= 2 * (N - 1); ++i) {
        auto const& m = logs[n][i - 1];
        int const held = i <= N - 1 ? i : N;
        int const chunk = static_cast<int>(m.first) / held - 1;
        BOOST_TEST(m.peer == (n - 1 + N) % N, "N=" << N << " n=" << n << " i=" << i);
        BOOST_TEST(chunk == ((n + i - 2) % N + N) % N, "N=" << N << " n=" << n << " i=" << i);
      }
    }
  }
}
