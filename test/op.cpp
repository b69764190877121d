#define BOOST_TEST_MODULE op
#include <boost/test/unit_test.hpp>

#include <gcl/op.hpp>

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>

namespace {
struct user_add {  // not declared commutative
  int operator()(int a, int b) const { return a + b; }
};
struct my_max {  // a type we "cannot edit", opted in below
  int operator()(int a, int b) const { return a < b ? b : a; }
};
using mat2 = std::array<int, 4>;  // 2x2 row-major: associative, not commutative
struct matmul {
  mat2 operator()(mat2 const& a, mat2 const& b) const {
    return {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
            a[2] * b[1] + a[3] * b[3]};
  }
};
}  // namespace

template <>
inline constexpr bool gcl::enable_commutative<my_max> = true;

// Built-ins are reduction operators and commutative; user callables only when they opt in.
static_assert(gcl::commutative_op<gcl::sum, int> && gcl::commutative_op<gcl::sum, double>);
static_assert(gcl::commutative_op<gcl::prod, float> && gcl::commutative_op<gcl::min, std::int64_t>);
static_assert(gcl::commutative_op<gcl::max, unsigned> &&
              gcl::commutative_op<gcl::bit_xor, std::uint8_t>);
static_assert(gcl::commutative_op<gcl::logical_or, bool>);
static_assert(gcl::reduction_op<user_add, int> && !gcl::commutative_op<user_add, int>);
static_assert(gcl::reduction_op<matmul, mat2> && !gcl::commutative_op<matmul, mat2>);
static_assert(gcl::commutative_op<my_max, int>);
static_assert(gcl::commutative_op<decltype(gcl::commutative(user_add{})), int>);
static_assert(gcl::op_name<gcl::sum>() == "sum" &&
              gcl::op_name<gcl::logical_xor>() == "logical_xor");
static_assert(gcl::op_name<user_add>() == "custom" && gcl::op_name<gcl::sum const&>() == "sum");
static_assert(gcl::sum{}(2, 3) == 5);  // usable in constant expressions

BOOST_AUTO_TEST_CASE(arithmetic) {
  BOOST_TEST(gcl::sum{}(3, 4) == 7);
  BOOST_TEST(gcl::sum{}(0.5, 0.25) == 0.75);
  BOOST_TEST(gcl::prod{}(-3, 4) == -12);
  BOOST_TEST(gcl::prod{}(std::uint8_t{16}, std::uint8_t{16}) == 0);  // wraps like uint8_t
  BOOST_TEST(gcl::min{}(3, -4) == -4);
  BOOST_TEST(gcl::max{}(3, -4) == 3);
  BOOST_TEST(gcl::min{}(std::numeric_limits<int>::min(), 0) == std::numeric_limits<int>::min());
}

BOOST_AUTO_TEST_CASE(min_and_max_return_the_first_operand_when_equal) {
  struct keyed {
    int key, id;
    bool operator<(keyed const& o) const { return key < o.key; }
  };
  BOOST_TEST(gcl::min{}(keyed{1, 10}, keyed{1, 20}).id == 10);
  BOOST_TEST(gcl::max{}(keyed{1, 10}, keyed{1, 20}).id == 10);
  BOOST_TEST(gcl::max{}(keyed{1, 10}, keyed{2, 20}).id == 20);
}

BOOST_AUTO_TEST_CASE(bitwise) {
  BOOST_TEST(gcl::bit_and{}(0b1100, 0b1010) == 0b1000);
  BOOST_TEST(gcl::bit_or{}(0b1100, 0b1010) == 0b1110);
  BOOST_TEST(gcl::bit_xor{}(0b1100, 0b1010) == 0b0110);
  BOOST_TEST(gcl::bit_xor{}(std::uint8_t{0xff}, std::uint8_t{0x0f}) == 0xf0);
}

BOOST_AUTO_TEST_CASE(logical) {
  for (int a : {0, 1, 5})
    for (int b : {0, 1, -2}) {
      BOOST_TEST(gcl::logical_and{}(a, b) == static_cast<int>(a && b));
      BOOST_TEST(gcl::logical_or{}(a, b) == static_cast<int>(a || b));
      BOOST_TEST(gcl::logical_xor{}(a, b) == static_cast<int>(!a != !b));
    }
  BOOST_TEST(gcl::logical_xor{}(true, true) == false);
  BOOST_TEST(gcl::logical_and{}(true, true) == true);
}

BOOST_AUTO_TEST_CASE(commutative_wrapper_calls_the_callable) {
  auto f = gcl::commutative([](int a, int b) { return 10 * a + b; });
  BOOST_TEST(f(1, 2) == 12);  // wrapping declares, it does not reorder
  BOOST_TEST(decltype(f)::commutative);
}

BOOST_AUTO_TEST_CASE(matrix_product_is_not_commutative) {
  mat2 a{1, 1, 0, 1}, b{1, 0, 1, 1};
  BOOST_TEST((matmul{}(a, b) == mat2{2, 1, 1, 1}));
  BOOST_TEST((matmul{}(b, a) == mat2{1, 1, 1, 2}));
}

// Each built-in takes only the types its expression is defined for, so gcl's check of a call
// (`reduction_op`) rejects a wrong pairing before the operator is instantiated. Checked at
// compile time: this file does not build if one fails.
struct no_operators {};
static_assert(gcl::reduction_op<gcl::bit_and, int> &&
              gcl::reduction_op<gcl::bit_xor, std::uint8_t>);
static_assert(!gcl::reduction_op<gcl::bit_and, double> && !gcl::reduction_op<gcl::bit_or, float>);
static_assert(!gcl::reduction_op<gcl::bit_xor, double>);
static_assert(gcl::reduction_op<gcl::sum, double> && gcl::reduction_op<gcl::prod, std::int64_t>);
static_assert(!gcl::reduction_op<gcl::sum, no_operators> &&
              !gcl::reduction_op<gcl::max, no_operators>);
static_assert(!gcl::reduction_op<gcl::logical_and, no_operators>);
static_assert(gcl::reduction_op<gcl::logical_or, bool> && gcl::reduction_op<gcl::min, float>);

// minloc and maxloc: on value_index pairs, commutative, ties to the lower index.
using vi = gcl::value_index<double>;
static_assert(gcl::commutative_op<gcl::minloc, vi> && gcl::commutative_op<gcl::maxloc, vi>);
static_assert(gcl::commutative_op<gcl::minloc, gcl::value_index<int, long>>);
static_assert(!gcl::reduction_op<gcl::minloc, double> && !gcl::reduction_op<gcl::maxloc, int>);
static_assert(!gcl::reduction_op<gcl::minloc, gcl::value_index<no_operators>>);
static_assert(std::is_trivially_copyable_v<vi>);
static_assert(gcl::op_name<gcl::minloc>() == "minloc" && gcl::op_name<gcl::avg>() == "avg");
// avg: floating types only; integers would round at each rank's division.
static_assert(gcl::commutative_op<gcl::avg, double> && gcl::commutative_op<gcl::avg, float>);
static_assert(!gcl::reduction_op<gcl::avg, int> && !gcl::reduction_op<gcl::avg, std::int64_t>);

BOOST_AUTO_TEST_CASE(minloc_and_maxloc_prefer_the_lower_index_in_either_order) {
  BOOST_TEST((gcl::minloc{}(vi{2, 5}, vi{1, 7}) == vi{1, 7}));
  BOOST_TEST((gcl::minloc{}(vi{1, 5}, vi{2, 3}) == vi{1, 5}));
  BOOST_TEST((gcl::minloc{}(vi{1, 5}, vi{1, 3}) == vi{1, 3}));
  BOOST_TEST((gcl::minloc{}(vi{1, 3}, vi{1, 5}) == vi{1, 3}));
  BOOST_TEST((gcl::maxloc{}(vi{2, 5}, vi{1, 7}) == vi{2, 5}));
  BOOST_TEST((gcl::maxloc{}(vi{1, 5}, vi{2, 7}) == vi{2, 7}));
  BOOST_TEST((gcl::maxloc{}(vi{2, 5}, vi{2, 3}) == vi{2, 3}));
  BOOST_TEST((gcl::maxloc{}(vi{2, 3}, vi{2, 5}) == vi{2, 3}));
}

BOOST_AUTO_TEST_CASE(avg_sums_and_finish_divides) {
  BOOST_TEST(gcl::avg{}(1.5, 2.0) == 3.5);
  std::array<double, 3> r{3.0, 6.0, -1.5};
  gcl::detail::finish(gcl::avg{}, std::span<double>(r), 3);
  BOOST_TEST((r == std::array<double, 3>{1.0, 2.0, -0.5}));
  std::array<int, 2> s{4, 6};
  gcl::detail::finish(gcl::sum{}, std::span<int>(s), 2);  // no finish: unchanged
  BOOST_TEST((s == std::array<int, 2>{4, 6}));
}
