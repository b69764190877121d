#define BOOST_TEST_MODULE algorithm_ring_segmented
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/ring.hpp>

#include "accounting.hpp"

// ring{.segment_bytes = s}: the pipelined ring. Same bits as the plain ring, and exactly
// 2 (P-1) sum over chunks c of max(1, ceil(|c| / s)) messages in 2 (P-1) rounds.

using namespace accounting;

namespace {
float noisy(int k, std::size_t i) {
  return 0.1f * static_cast<float>(k + 1) + 1e-3f * i;
}
}  // namespace

BOOST_AUTO_TEST_CASE(bit_identical_to_the_plain_ring_and_exact_counts) {
  for (int p = 1; p <= 9; ++p)
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t(p + 1), std::size_t{37}, std::size_t{1000}})
      for (std::size_t seg_elems :
           {std::size_t{1}, std::size_t{3}, std::size_t{16}, std::size_t{5000}}) {
        gcl::ring const seg{.segment_bytes = seg_elems * sizeof(float)};
        auto plain = run<float>(p, n, gcl::sum{}, gcl::ring{}, noisy);
        auto piped = run<float>(p, n, gcl::sum{}, seg, noisy);
        for (int k = 0; k < p; ++k)
          BOOST_TEST((piped.data[k] == plain.data[k]),
                     "P=" << p << " n=" << n << " s=" << seg_elems);
        std::uint64_t messages = 0;
        if (p > 1)
          for (int c = 0; c < p; ++c) {
            std::size_t const len = n / p + (static_cast<std::size_t>(c) < n % p ? 1 : 0);
            messages += 2 * (p - 1) * std::max<std::size_t>(1, (len + seg_elems - 1) / seg_elems);
          }
        BOOST_TEST(piped.total.messages_sent == messages,
                   "P=" << p << " n=" << n << " s=" << seg_elems);
        BOOST_TEST(piped.total.bytes_sent == plain.total.bytes_sent);
        BOOST_TEST(piped.total.rounds == 2 * (p - 1));
        if (p > 1 && n >= static_cast<std::size_t>(p) * seg_elems)
          BOOST_TEST(piped.total.max_message_bytes == seg_elems * sizeof(float));
      }
}

BOOST_AUTO_TEST_CASE(integer_sums_are_exact) {
  for (int p : {2, 3, 4, 7, 8}) {
    auto r = run<std::int64_t>(p, 10007, gcl::sum{}, gcl::ring{.segment_bytes = 1000}, value);
    auto e = expected_sum<std::int64_t>(p, 10007, value);
    for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e);
  }
}

BOOST_AUTO_TEST_CASE(works_over_a_transport_without_irecv) {
  // communicator::irecv falls back to a deferred blocking receive: same results.
  struct plain_transport {
    gcl::inproc_transport t;
    int rank() const { return t.rank(); }
    int size() const { return t.size(); }
    void send(int peer, gcl::tag tg, std::span<std::byte const> b) { t.send(peer, tg, b); }
    void recv(int peer, gcl::tag tg, std::span<std::byte> b) { t.recv(peer, tg, b); }
  };
  static_assert(!gcl::irecv_transport<plain_transport>);
  gcl::inproc_transport::group g(4);
  std::vector<std::vector<std::int64_t>> out(4);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < 4; ++r)
      threads.emplace_back([&, r] {
        gcl::communicator<plain_transport> comm(plain_transport{g.connect(r)});
        std::vector<std::int64_t> v(1001);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = value(r, i);
        gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{.segment_bytes = 80});
        out[r] = v;
      });
  }
  auto e = expected_sum<std::int64_t>(4, 1001, value);
  for (auto const& v : out) BOOST_TEST(v == e);
}
