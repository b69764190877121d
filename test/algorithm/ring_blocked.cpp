#define BOOST_TEST_MODULE algorithm_ring_blocked
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/ring.hpp>
#include <gcl/cost_model.hpp>

#include <algorithm>
#include <vector>

#include "accounting.hpp"

// ring{.block_bytes = b}: a buffer of more than b bytes is all-reduced in k = ceil(n / (b /
// sizeof(T))) blocks, the first n % k of them one element longer, each a whole ring all_reduce
// of its own. So: the same bits as the plain ring run on each block in turn, 2 (P - 1)
// messages per rank per block, and nothing changes for a buffer of at most b bytes.

using namespace accounting;

namespace {

float noisy(int k, std::size_t i) {
  return 0.1f * static_cast<float>(k + 1) + 1e-3f * static_cast<float>(i % 1000) +
         1e-7f * static_cast<float>(i);
}

// The blocks as the comment above defines them, written out independently of the algorithm.
std::vector<std::size_t> block_lengths(std::size_t n, std::size_t block_elements) {
  std::size_t const k = (n + block_elements - 1) / block_elements;
  std::vector<std::size_t> lengths;
  for (std::size_t b = 0; b < k; ++b) lengths.push_back(n / k + (b < n % k ? 1 : 0));
  return lengths;
}

// The reference: the plain ring, called by hand on each block in turn.
struct ring_per_block {
  static constexpr std::string_view name = "ring_per_block";
  static constexpr bool needs_commutative = true;
  std::size_t block_elements = 1;
  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    std::size_t at = 0;
    for (std::size_t len : block_lengths(data.size(), block_elements)) {
      gcl::ring{}.all_reduce(comm, data.subspan(at, len), op);
      at += len;
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(same_bits_and_messages_as_the_plain_ring_on_each_block) {
  for (int p = 1; p <= 9; ++p)
    for (std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{1000}, std::size_t{4099}})
      for (std::size_t block :
           {std::size_t{1}, std::size_t{5}, std::size_t{64}, std::size_t{999}}) {
        if (n / block > 300) continue;  // keeps the runs short: 300 rings at most
        gcl::ring const blocked{.block_bytes = block * sizeof(float)};
        auto got = run<float>(p, n, gcl::sum{}, blocked, noisy);
        auto want = run<float>(p, n, gcl::sum{}, ring_per_block{block}, noisy);
        for (int k = 0; k < p; ++k)
          BOOST_TEST((got.data[k] == want.data[k]), "P=" << p << " n=" << n << " block=" << block);
        BOOST_TEST(same_counts(got.total, want.total),
                   "P=" << p << " n=" << n << " block=" << block);
        auto const k = block_lengths(n, block).size();
        BOOST_TEST(blocked.blocks(n, sizeof(float)) == k);
        if (p > 1)
          for (auto const& s : got.per_rank)
            BOOST_TEST(s.messages_sent == k * 2 * (p - 1), "P=" << p << " n=" << n);
      }
}

BOOST_AUTO_TEST_CASE(blocks_are_not_the_whole_ring) {
  // The test above compares against a reference built from the plain ring: show that blocking
  // changes the messages at such sizes, so that the comparison means something.
  int const p = 3;
  std::size_t const n = 1000, block = 64;
  auto blocked =
      run<float>(p, n, gcl::sum{}, gcl::ring{.block_bytes = block * sizeof(float)}, noisy);
  auto whole = run<float>(p, n, gcl::sum{}, gcl::ring{}, noisy);
  BOOST_TEST(blocked.total.messages_sent > whole.total.messages_sent);
  BOOST_TEST(blocked.total.max_message_bytes < whole.total.max_message_bytes);
}

BOOST_AUTO_TEST_CASE(a_buffer_within_one_block_is_the_plain_ring) {
  for (int p : {2, 3, 5})
    for (std::size_t n : {std::size_t{0}, std::size_t{10}, std::size_t{256}}) {
      auto got = run<float>(p, n, gcl::sum{}, gcl::ring{.block_bytes = 256 * sizeof(float)}, noisy);
      auto plain = run<float>(p, n, gcl::sum{}, gcl::ring{}, noisy);
      for (int k = 0; k < p; ++k) BOOST_TEST((got.data[k] == plain.data[k]));
      BOOST_TEST(same_counts(got.total, plain.total), "P=" << p << " n=" << n);
    }
}

BOOST_AUTO_TEST_CASE(integer_sums_are_exact_with_blocks_and_segments) {
  for (int p : {2, 3, 4, 7, 8}) {
    gcl::ring const alg{.segment_bytes = 400, .block_bytes = 8000};
    auto r = run<std::int64_t>(p, 10007, gcl::sum{}, alg, value);
    auto e = expected_sum<std::int64_t>(p, 10007, value);
    for (int k = 0; k < p; ++k) BOOST_TEST(r.data[k] == e, "P=" << p);
  }
}

BOOST_AUTO_TEST_CASE(the_schedule_is_one_ring_per_block) {
  for (int p : {2, 4, 8}) {
    std::size_t const n = 10000;
    gcl::ring const blocked{.block_bytes = 1024 * sizeof(float)};
    std::vector<gcl::cost_step> steps, want;
    gcl::for_each_step(blocked, p, n, sizeof(float), [&](gcl::cost_step s) { steps.push_back(s); });
    for (std::size_t len : block_lengths(n, 1024))
      gcl::for_each_step(gcl::ring{}, p, len, sizeof(float),
                         [&](gcl::cost_step s) { want.push_back(s); });
    BOOST_TEST(steps.size() == 10u * 2 * (p - 1));
    BOOST_TEST(steps.size() == want.size());
    for (std::size_t i = 0; i < std::min(steps.size(), want.size()); ++i)
      BOOST_TEST((steps[i].bytes == want[i].bytes && steps[i].messages == want[i].messages &&
                  steps[i].reduced_bytes == want[i].reduced_bytes));
  }
}
