#pragma once
// Shared by the all_reduce algorithm tests: run one all_reduce on P ranks under
// counting<inproc_transport> and return every rank's result and statistics, with integer-valued
// inputs whose reduction the test computes itself. Ranks never call BOOST_TEST (Boost.Test is
// not thread-safe); the main thread checks what they return.
//
// Every run is made twice: also under counting<archetype_transport>, the transport with only
// the required members (test/support/archetype_transport.hpp), where the communicator falls
// back to send then recv for sendrecv and to a receive in wait() for irecv. The fallbacks must
// change nothing an algorithm does: the same results, bit for bit, and the same messages, sizes
// and rounds, which `run` and `counted_run` check before returning the inproc run's.

#include <boost/test/unit_test.hpp>

#include <gcl/collective/all_reduce.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../support/archetype_transport.hpp"

namespace accounting {

using counted = gcl::counting<gcl::inproc_transport>;
using counted_archetype = gcl::counting<gcl_test::archetype_transport>;

/// Whether two runs' counts are the same in every field (`transport_stats` has no ==).
inline bool same_counts(gcl::transport_stats const& a, gcl::transport_stats const& b) {
  return a.messages_sent == b.messages_sent && a.bytes_sent == b.bytes_sent &&
         a.messages_received == b.messages_received && a.bytes_received == b.bytes_received &&
         a.min_message_bytes == b.min_message_bytes && a.max_message_bytes == b.max_message_bytes &&
         a.sent_sizes == b.sent_sizes && a.rounds == b.rounds;
}

/// Value of element i on rank r: small integers, exact in float as well as in int64.
inline std::int64_t value(int r, std::size_t i) {
  return static_cast<std::int64_t>((r + 1) * static_cast<int>(i % 7 + 1)) - 3 * r;
}

template <class T>
struct run_result {
  std::vector<std::vector<T>> data;  // per rank, after the all_reduce
  std::vector<gcl::transport_stats> per_rank;
  gcl::transport_stats total;
};

/// Runs `gcl::all_reduce(comm, v, op, alg)` with v[i] = make(rank, i), under
/// counting<inproc_transport>, and checks that the archetype transport gives the same.
template <class T, class Op, class Alg, class Make>
run_result<T> run(int p, std::size_t count, Op op, Alg alg, Make make) {
  auto body = [&](auto& comm) {
    std::vector<T> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = make(comm.rank(), i);
    gcl::all_reduce(comm, v, op, alg);
    return std::pair(v, comm.transport().stats());
  };
  auto collect = [](auto out) {
    run_result<T> r;
    for (auto& [v, s] : out) {
      r.data.push_back(std::move(v));
      r.per_rank.push_back(s);
      r.total += s;
    }
    return r;
  };
  auto r = collect(gcl::spawn<counted>(p, body));
  auto a = collect(gcl_test::spawn_archetype<counted_archetype>(p, body));
  for (int k = 0; k < p; ++k) {
    auto const i = static_cast<std::size_t>(k);
    BOOST_TEST((a.data[i] == r.data[i]), Alg::name << " P=" << p << " n=" << count << " rank " << k
                                                   << ": a different result over the archetype");
    BOOST_TEST(same_counts(a.per_rank[i], r.per_rank[i]),
               Alg::name << " P=" << p << " n=" << count << " rank " << k
                         << ": different messages over the archetype");
  }
  return r;
}

/// Runs `f(comm)` on p counted ranks and returns the stats summed over ranks, after checking
/// that the archetype transport sends the same.
template <class F>
gcl::transport_stats counted_run(int p, F f) {
  auto body = [&](auto& comm) {
    f(comm);
    return comm.transport().stats();
  };
  auto sum = [](auto const& stats) {
    gcl::transport_stats total;
    for (auto& s : stats) total += s;
    return total;
  };
  auto total = sum(gcl::spawn<counted>(p, body));
  BOOST_TEST(same_counts(sum(gcl_test::spawn_archetype<counted_archetype>(p, body)), total),
             "P=" << p << ": different messages over the archetype");
  return total;
}

/// The sum of make(r, i) over ranks, as T.
template <class T, class Make>
std::vector<T> expected_sum(int p, std::size_t count, Make make) {
  std::vector<T> e(count, T{});
  for (int r = 0; r < p; ++r)
    for (std::size_t i = 0; i < count; ++i) e[i] = static_cast<T>(e[i] + make(r, i));
  return e;
}

/// An associative, non-commutative operator: composition of affine maps x -> a x + b modulo
/// 2^64, "left then right". Exact, so any reordering of operands shows up.
struct affine {
  std::uint64_t a = 1, b = 0;
  friend bool operator==(affine const&, affine const&) = default;
};
struct compose {
  affine operator()(affine const& l, affine const& r) const { return {r.a * l.a, r.a * l.b + r.b}; }
};
inline affine affine_of(int r, std::size_t i) {
  return {static_cast<std::uint64_t>(2 * r + 3 + i), static_cast<std::uint64_t>(r * 7 + i)};
}
inline std::vector<affine> expected_composition(int p, std::size_t count) {
  std::vector<affine> e(count);
  for (std::size_t i = 0; i < count; ++i) {
    e[i] = affine_of(0, i);
    for (int r = 1; r < p; ++r) e[i] = compose{}(e[i], affine_of(r, i));
  }
  return e;
}

/// The element counts every algorithm is checked with on P ranks.
inline std::vector<std::size_t> counts_for(int p) {
  auto P = static_cast<std::size_t>(p);
  return {0, 1, P - 1, P, P + 1, 2 * P + 3, 37, 1000};
}

/// Integer log2 of a power of two, and the largest power of two <= p, written out here rather
/// than taken from the library.
inline int floor_pow2(int p) {
  int q = 1;
  while (q * 2 <= p) q *= 2;
  return q;
}
inline int log2_exact(int q) {
  int l = 0;
  while ((1 << l) < q) ++l;
  return l;
}
/// ceil(log2 p): the smallest l with 2^l >= p.
inline int ceil_log2(int p) {
  return log2_exact(p);
}

}  // namespace accounting
