#define BOOST_TEST_MODULE call_info
#include <boost/test/unit_test.hpp>

#include <gcl/call_info.hpp>
#include <gcl/transport/inproc/channel.hpp>

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

using gcl::dtype;
using gcl::dtype_of;

static_assert(std::is_trivially_copyable_v<gcl::call_info>);
static_assert(std::is_standard_layout_v<gcl::call_info>);
static_assert(dtype_of<float>() == dtype::float32 && dtype_of<double const>() == dtype::float64);
static_assert(dtype_of<bool>() == dtype::boolean && dtype_of<std::byte>() == dtype::bytes);
static_assert(dtype_of<std::int8_t>() == dtype::int8 && dtype_of<std::uint8_t>() == dtype::uint8);
static_assert(dtype_of<std::int16_t>() == dtype::int16 &&
              dtype_of<std::uint16_t>() == dtype::uint16);
static_assert(dtype_of<std::int32_t>() == dtype::int32 &&
              dtype_of<std::uint32_t>() == dtype::uint32);
static_assert(dtype_of<std::int64_t>() == dtype::int64 &&
              dtype_of<std::uint64_t>() == dtype::uint64);
static_assert(dtype_of<long long>() == dtype::int64 && dtype_of<char>() != dtype::other);
static_assert(dtype_of<std::complex<float>>() == dtype::complex64);
static_assert(dtype_of<std::complex<double>>() == dtype::complex128);
static_assert(dtype_of<long double>() == dtype::other);
static_assert(gcl::name_of(dtype::complex128) == "complex128" &&
              gcl::name_of(dtype::boolean) == "bool");
static_assert(gcl::name_of(gcl::call_kind::reduce_scatter) == "reduce_scatter");
static_assert(gcl::name_of(gcl::call_kind::point_to_point) == "send/recv");

namespace {
struct three_floats {
  float x, y, z;
};
}  // namespace

BOOST_AUTO_TEST_CASE(every_name_is_distinct) {
  for (int i = 0; i <= static_cast<int>(dtype::other); ++i)
    for (int j = 0; j < i; ++j)
      BOOST_TEST(gcl::name_of(static_cast<dtype>(i)) != gcl::name_of(static_cast<dtype>(j)));
  for (int i = 0; i <= static_cast<int>(gcl::last_call_kind); ++i) {
    BOOST_TEST(!gcl::name_of(static_cast<gcl::call_kind>(i)).empty());
    for (int j = 0; j < i; ++j)
      BOOST_TEST(gcl::name_of(static_cast<gcl::call_kind>(i)) !=
                 gcl::name_of(static_cast<gcl::call_kind>(j)));
  }
  BOOST_TEST(gcl::name_of(gcl::call_kind::exscan) == "exscan");
  BOOST_TEST(gcl::name_of(gcl::call_kind::split) == "split");
}

BOOST_AUTO_TEST_CASE(counts_digest_tells_counts_apart) {
  std::vector<std::size_t> a{1, 2, 3}, b{2, 1, 3}, c{1, 2, 3, 0}, d{1, 2, 3};
  BOOST_TEST(gcl::counts_digest(a) == gcl::counts_digest(d));
  BOOST_TEST(gcl::counts_digest(a) != gcl::counts_digest(b));  // order matters
  BOOST_TEST(gcl::counts_digest(a) != gcl::counts_digest(c));  // so does a trailing 0
  BOOST_TEST(gcl::counts_digest(std::vector<std::size_t>{}) !=
             gcl::counts_digest(std::vector<std::size_t>{0}));
}

BOOST_AUTO_TEST_CASE(describe_says_variable_counts) {
  auto c = gcl::make_call_info<int>(gcl::call_kind::gatherv, 0x0123456789abcdefu, 0, "", "direct");
  c.sequence = 4;
  BOOST_TEST(gcl::describe(c) ==
             "gatherv #4 (direct, counts digest 0123456789abcdef of int32, root 0)");
  auto v = gcl::make_call_info<float>(gcl::call_kind::all_to_allv, 0, -1, "", "direct");
  v.sequence = 2;
  BOOST_TEST(gcl::describe(v) == "all_to_allv #2 (direct, per-rank counts of float32)");
  BOOST_TEST(gcl::has_variable_counts(gcl::call_kind::reduce_scatterv));
  BOOST_TEST(!gcl::has_variable_counts(gcl::call_kind::reduce_scatter));
  BOOST_TEST(!gcl::has_variable_counts(gcl::call_kind::scan));
}

BOOST_AUTO_TEST_CASE(make_call_info_fills_every_field) {
  auto c = gcl::make_call_info<double>(gcl::call_kind::reduce, 1000, 2, "sum", "tree");
  BOOST_TEST((c.kind == gcl::call_kind::reduce));
  BOOST_TEST((c.type == dtype::float64));
  BOOST_TEST(c.element_size == 8);
  BOOST_TEST(c.root == 2);
  BOOST_TEST(c.count == 1000u);
  BOOST_TEST(c.sequence == 0u);  // set by communicator::begin_call
  BOOST_TEST(std::string(c.op) == "sum");
  BOOST_TEST(std::string(c.algorithm) == "tree");
}

BOOST_AUTO_TEST_CASE(long_names_are_truncated_and_terminated) {
  auto c = gcl::make_call_info<int>(gcl::call_kind::all_reduce, 1, -1, "a_very_long_operator_name",
                                    "an_even_longer_algorithm_name");
  BOOST_TEST(std::string(c.op) == "a_very_long");  // 11 characters + '\0'
  BOOST_TEST(std::string(c.algorithm) == "an_even_longer_algo");
  BOOST_TEST(c.op[sizeof c.op - 1] == '\0');
}

BOOST_AUTO_TEST_CASE(equality_compares_every_field) {
  auto a = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 10, -1, "sum", "ring");
  auto b = a;
  BOOST_TEST((a == b));
  b.sequence = 1;
  BOOST_TEST(!(a == b));
  b = a;
  b.count = 11;
  BOOST_TEST(!(a == b));
  b = a;
  b.algorithm[0] = 'x';
  BOOST_TEST(!(a == b));
  BOOST_TEST((gcl::call_info{} == gcl::call_info{}));
}

// inproc's receivers compare a 64-bit digest of the call, not the call: a change of any field,
// at any byte of the names, must change it.
BOOST_AUTO_TEST_CASE(the_digest_covers_every_field) {
  auto const a = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 10, 2, "sum", "ring");
  auto const base = gcl::detail::call_digest(a);
  BOOST_TEST(gcl::detail::call_digest(a) == base);
  std::vector<gcl::call_info> changed(8, a);
  changed[0].kind = gcl::call_kind::broadcast;
  changed[1].type = gcl::dtype::float64;
  changed[2].element_size = 8;
  changed[3].root = 3;
  changed[4].sequence = 1;
  changed[5].count = 11;
  changed[6].op[0] = 'x';
  changed[7].algorithm[0] = 'x';
  for (std::size_t i = 0; i < sizeof a.op; ++i) {
    changed.push_back(a);
    changed.back().op[i] ^= 1;
  }
  for (std::size_t i = 0; i < sizeof a.algorithm; ++i) {
    changed.push_back(a);
    changed.back().algorithm[i] ^= 1;
  }
  for (std::size_t i = 0; i < changed.size(); ++i)
    BOOST_TEST(gcl::detail::call_digest(changed[i]) != base, "change " << i);
}

BOOST_AUTO_TEST_CASE(describe_is_readable) {
  BOOST_TEST(gcl::describe(gcl::call_info{}) == "send/recv");
  auto a = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 1000, -1, "sum", "ring");
  a.sequence = 3;
  BOOST_TEST(gcl::describe(a) == "all_reduce #3 (ring, sum, 1000 x float32)");
  auto b = gcl::make_call_info<std::int64_t>(gcl::call_kind::broadcast, 7, 2, "", "tree");
  b.sequence = 1;
  BOOST_TEST(gcl::describe(b) == "broadcast #1 (tree, 7 x int64, root 2)");
  auto c = gcl::make_call_info<three_floats>(gcl::call_kind::gather, 4, 0, "", "direct");
  c.sequence = 12;
  BOOST_TEST(gcl::describe(c) == "gather #12 (direct, 4 x other[12 B], root 0)");
}
