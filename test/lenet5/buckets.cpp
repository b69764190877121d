// Tests of example/lenet5/buckets.hpp (the gradient buckets of --sync grads, as DDP's
// bucket_cap_mb forms them) and of the layer hook of network::forward_backward that starts them.
#define BOOST_TEST_MODULE lenet5_buckets
#include <boost/test/unit_test.hpp>

#include "blas_threads.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "buckets.hpp"
#include "network.hpp"

namespace {

struct blas_one_thread {
  blas_one_thread() { lenet5::set_blas_threads(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(blas_one_thread);

using net = lenet5::network<float>;
constexpr std::size_t kib = 1024;

std::vector<lenet5::bucket> buckets_of(std::vector<std::size_t> const& sizes,
                                       std::size_t cap_bytes) {
  return lenet5::make_buckets(sizes, cap_bytes, sizeof(float));
}

// Every property a packing must have, for any cap: the buckets cover the arena back to front
// without gap or overlap, in reverse layer order, each whole layers; each is at most the cap or
// a single layer; and each is full: the next layer would not have fitted.
void check_packing(std::vector<std::size_t> const& sizes, std::size_t cap_bytes) {
  BOOST_TEST_CONTEXT("cap " << cap_bytes << " bytes") {
    auto const b = buckets_of(sizes, cap_bytes);
    std::vector<std::size_t> offset(sizes.size() + 1, 0);
    for (std::size_t i = 0; i < sizes.size(); ++i) offset[i + 1] = offset[i] + sizes[i];
    std::size_t next_last = sizes.size();  // bucket k ends where bucket k - 1 began
    for (std::size_t k = 0; k < b.size(); ++k) {
      BOOST_TEST_REQUIRE(b[k].first <= b[k].last);
      BOOST_TEST(b[k].last + 1 == next_last);
      BOOST_TEST(b[k].offset == offset[b[k].first]);
      BOOST_TEST(b[k].count == offset[b[k].last + 1] - offset[b[k].first]);
      BOOST_TEST((b[k].count * sizeof(float) <= cap_bytes || b[k].first == b[k].last));
      if (b[k].first > 0)  // full: the next layer backward did not fit
        BOOST_TEST((b[k].count + sizes[b[k].first - 1]) * sizeof(float) > cap_bytes);
      next_last = b[k].first;
    }
    BOOST_TEST(next_last == 0u);  // every layer is in a bucket
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(lenet5_at_64_kib_is_three_buckets_last_layers_first) {
  // C1 156, C3 2416, F5 48120, F6 10164, F7 850 floats; F5 alone is 188 KiB.
  auto const b = lenet5::make_buckets(net::layer_parameters, 64 * kib, sizeof(float));
  std::vector<lenet5::bucket> const want{
      {.first = 3, .last = 4, .offset = 50692, .count = 11014},  // F6, F7: 43 KiB
      {.first = 2, .last = 2, .offset = 2572, .count = 48120},   // F5, larger than the cap
      {.first = 0, .last = 1, .offset = 0, .count = 2572}};      // C1, C3
  BOOST_TEST((b == want));
  BOOST_TEST(net::layer_offset(2) == 2572u);
  BOOST_TEST(net::parameter_count == 61706u);
}

BOOST_AUTO_TEST_CASE(a_large_cap_is_one_bucket_as_before) {
  // 61706 floats are 241.04 KiB: 242 KiB holds them all, 241 KiB does not.
  for (std::size_t cap : {242 * kib, 1024 * kib, std::size_t{1} << 40}) {
    auto const b = lenet5::make_buckets(net::layer_parameters, cap, sizeof(float));
    BOOST_TEST_REQUIRE(b.size() == 1u);
    BOOST_TEST(b[0].offset == 0u);
    BOOST_TEST(b[0].count == net::parameter_count);
  }
  BOOST_TEST(lenet5::make_buckets(net::layer_parameters, 241 * kib, sizeof(float)).size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_layer_larger_than_the_cap_is_alone_and_never_split) {
  // 1 KiB: every LeNet-5 layer is larger (C1 is 624 bytes, so C1 and C3 still do not share).
  auto const b = lenet5::make_buckets(net::layer_parameters, 1 * kib, sizeof(float));
  BOOST_TEST_REQUIRE(b.size() == 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    BOOST_TEST(b[k].first == 4 - k);
    BOOST_TEST(b[k].last == 4 - k);
    BOOST_TEST(b[k].count == net::layer_parameters[4 - k]);
  }
  // A small layer after a large one starts a new bucket; small ones then share it.
  auto const s = buckets_of({1, 1, 100, 1, 1}, 10 * sizeof(float));
  std::vector<lenet5::bucket> const want{{.first = 3, .last = 4, .offset = 102, .count = 2},
                                         {.first = 2, .last = 2, .offset = 2, .count = 100},
                                         {.first = 0, .last = 1, .offset = 0, .count = 2}};
  BOOST_TEST((s == want));
}

BOOST_AUTO_TEST_CASE(the_cap_is_inclusive_and_counts_bytes) {
  BOOST_TEST(buckets_of({2, 2}, 16).size() == 1u);  // 4 floats, 16 bytes: exactly the cap
  BOOST_TEST(buckets_of({2, 2}, 15).size() == 2u);
  BOOST_TEST(lenet5::make_buckets(std::vector<std::size_t>{2, 2}, 16, sizeof(double)).size() == 2u);
  BOOST_TEST(buckets_of({}, 16).empty());
}

BOOST_AUTO_TEST_CASE(every_cap_packs_in_reverse_order_within_the_cap) {
  std::vector<std::size_t> const lenet(net::layer_parameters.begin(), net::layer_parameters.end());
  for (std::size_t cap = 1; cap <= 250; ++cap) check_packing(lenet, cap * kib);
  std::mt19937_64 rng(7);
  for (int t = 0; t < 200; ++t) {
    std::vector<std::size_t> sizes(1 + rng() % 12);
    for (auto& n : sizes) n = 1 + rng() % 50;
    check_packing(sizes, 4 * (1 + rng() % 120));
  }
}

BOOST_AUTO_TEST_CASE(the_hook_runs_when_each_layer_is_final_last_layer_first) {
  // With the hook, each layer's gradients are final when it is called for that layer: a copy
  // taken then equals the gradients at the end; and the hook changes nothing else.
  std::vector<float> p(net::parameter_count), g(p.size()), g_plain(p.size());
  net n(p, g);
  n.init(3);
  int const batch = 3;
  std::vector<float> x(std::size_t(batch) * 784);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  for (auto& v : x) v = normal(rng);
  std::vector<std::uint8_t> const labels{1, 7, 4};

  float const plain = n.forward_backward(x.data(), labels.data(), batch);
  g_plain = g;
  std::fill(g.begin(), g.end(), -1.f);

  std::vector<std::size_t> order;
  std::vector<float> seen(g.size(), 0.f);
  float const hooked = n.forward_backward(x.data(), labels.data(), batch, [&](std::size_t i) {
    order.push_back(i);
    auto const off = net::layer_offset(i);
    std::copy_n(g.begin() + std::ptrdiff_t(off), net::layer_parameters[i],
                seen.begin() + std::ptrdiff_t(off));
  });
  BOOST_TEST((order == std::vector<std::size_t>{4, 3, 2, 1, 0}));
  BOOST_TEST(hooked == plain);
  BOOST_TEST((g == g_plain));
  BOOST_TEST((seen == g));
}
