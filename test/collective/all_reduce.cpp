#define BOOST_TEST_MODULE collective_all_reduce
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>

#include <array>
#include <cstdint>
#include <ostream>

#include "support.hpp"

using namespace gcl_test;

template <class T, class Alg>
void sweep_sum(Alg alg) {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p))
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        std::vector<T> v(n), want(n, T{});
        for (std::size_t i = 0; i < n; ++i) {
          v[i] = value<T>(comm.rank(), i);
          for (int r = 0; r < p; ++r) want[i] += value<T>(r, i);
        }
        gcl::all_reduce(comm, v, gcl::sum{}, alg);
        return diff(v, want);
      });
}

BOOST_AUTO_TEST_CASE(sum_tree_float) {
  sweep_sum<float>(gcl::tree{});
}
BOOST_AUTO_TEST_CASE(sum_tree_int) {
  sweep_sum<int>(gcl::tree{});
}
BOOST_AUTO_TEST_CASE(sum_ring_float) {
  sweep_sum<float>(gcl::ring{});
}
BOOST_AUTO_TEST_CASE(sum_ring_int) {
  sweep_sum<int>(gcl::ring{});
}

template <class Op, class Alg>
void check_op(Op op, Alg alg, std::int64_t identity) {
  for (int p : world_sizes)
    for (std::size_t n : {std::size_t{1}, std::size_t(p + 1), std::size_t{37}})
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        auto val = [](int r, std::size_t i) { return std::int64_t((r * 3 + i) % 5) + 1; };
        std::vector<std::int64_t> v(n), want(n, identity);
        for (std::size_t i = 0; i < n; ++i) {
          v[i] = val(comm.rank(), i);
          for (int r = 0; r < p; ++r) want[i] = op(want[i], val(r, i));
        }
        gcl::all_reduce(comm, v, op, alg);
        return diff(v, want);
      });
}

BOOST_AUTO_TEST_CASE(prod_min_max_xor_both_algorithms) {
  check_op(gcl::prod{}, gcl::tree{}, 1);
  check_op(gcl::prod{}, gcl::ring{}, 1);
  check_op(gcl::min{}, gcl::tree{}, 1000);
  check_op(gcl::min{}, gcl::ring{}, 1000);
  check_op(gcl::max{}, gcl::tree{}, -1);
  check_op(gcl::max{}, gcl::ring{}, -1);
  check_op(gcl::bit_xor{}, gcl::tree{}, 0);
  check_op(gcl::bit_xor{}, gcl::ring{}, 0);
}

BOOST_AUTO_TEST_CASE(scalar_span_and_array_payloads_and_defaults) {
  run(5, "P=5", [](auto& comm) {
    std::string err;
    int x = comm.rank();
    gcl::all_reduce(comm, x);  // default: sum, by_size
    if (x != 10) err += "scalar " + std::to_string(x) + "; ";
    std::array<double, 3> a{1, 2, double(comm.rank())};
    gcl::all_reduce(comm, std::span<double>(a), gcl::max{}, gcl::tree{});
    if (a[2] != 4 || a[0] != 1) err += "span; ";
    return err;
  });
}

/// 2x2 integer matrices under the matrix product: associative, not commutative.
struct mat {
  std::int64_t a, b, c, d;
  friend bool operator==(mat const&, mat const&) = default;
  friend std::ostream& operator<<(std::ostream& o, mat const& m) {
    return o << "[" << m.a << " " << m.b << "; " << m.c << " " << m.d << "]";
  }
};
struct matmul {  // deliberately not declared commutative
  mat operator()(mat const& x, mat const& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
            x.c * y.b + x.d * y.d};
  }
};
mat matrix(int r, std::size_t i) {
  return {1, std::int64_t((r + i) % 3), std::int64_t((r * 2 + i) % 2), 1};
}

BOOST_AUTO_TEST_CASE(tree_keeps_rank_order_for_matrix_products) {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p, 1001))
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        std::vector<mat> v(n), want(n, mat{1, 0, 0, 1}), reversed(n, mat{1, 0, 0, 1});
        for (std::size_t i = 0; i < n; ++i) {
          v[i] = matrix(comm.rank(), i);
          for (int r = 0; r < p; ++r) want[i] = matmul{}(want[i], matrix(r, i));
          for (int r = p - 1; r >= 0; --r) reversed[i] = matmul{}(reversed[i], matrix(r, i));
        }
        // The oracle must be order-sensitive, or this test could not fail.
        if (p >= 2 && n >= 37 && want == reversed) return std::string("oracle is symmetric");
        gcl::all_reduce(comm, v, matmul{}, gcl::tree{});
        return diff(v, want);
      });
}

BOOST_AUTO_TEST_CASE(operand_order_left_and_right_projection) {
  // op(a, b) = a and op(a, b) = b are associative; over ranks in order they give rank 0's and
  // rank P-1's value. Ring with a commutative-declared op is still allowed to reorder, so only
  // the tree is held to this.
  auto left = [](int a, int) { return a; };
  auto right = [](int, int b) { return b; };
  for (int p : world_sizes)
    run(p, "P=" + std::to_string(p), [&](auto& comm) {
      std::vector<int> l(5, comm.rank()), r(5, comm.rank());
      gcl::all_reduce(comm, l, left, gcl::tree{});
      gcl::all_reduce(comm, r, right, gcl::tree{});
      return diff(l, std::vector<int>(5, 0)) + diff(r, std::vector<int>(5, p - 1));
    });
}

BOOST_AUTO_TEST_CASE(commutative_wrapper_is_accepted_by_ring) {
  auto add = gcl::commutative([](int a, int b) { return a + b; });
  run(4, "P=4", [&](auto& comm) {
    std::vector<int> v(9, 1);
    gcl::all_reduce(comm, v, add, gcl::ring{});
    return diff(v, std::vector<int>(9, 4));
  });
}

template <class Alg>
void mismatch(Alg alg) {
  for (int p : {2, 3, 4, 5, 8})
    for (int odd : {1, p - 1}) {
      auto what = expect_mismatch(p, [&](auto& comm) {
        std::vector<float> v(comm.rank() == odd ? 11 : 10, 1.0f);
        gcl::all_reduce(comm, v, gcl::sum{}, alg);
      });
      check_names_two_ranks(what, odd);
      BOOST_TEST(what.find("all_reduce") != std::string::npos, what);
    }
  // A zero count on one rank still fails at once: empty messages carry the call too.
  auto what = expect_mismatch(3, [&](auto& comm) {
    std::vector<int> v(comm.rank() == 2 ? 0 : 5, 1);
    gcl::all_reduce(comm, v, gcl::sum{}, alg);
  });
  check_names_two_ranks(what, 2);
}

BOOST_AUTO_TEST_CASE(different_counts_fail_tree) {
  mismatch(gcl::tree{});
}
BOOST_AUTO_TEST_CASE(different_counts_fail_ring) {
  mismatch(gcl::ring{});
}

BOOST_AUTO_TEST_CASE(repeated_calls_reuse_scratch) {
  run(3, "P=3", [](auto& comm) {
    std::string err;
    for (std::size_t n : {100, 5, 1000, 0, 17}) {
      std::vector<int> v(n, 2);
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
      err += diff(v, std::vector<int>(n, 6));
      std::vector<int> w(n, 2);
      gcl::all_reduce(comm, w, gcl::prod{}, gcl::tree{});
      err += diff(w, std::vector<int>(n, 8));
    }
    return err;
  });
}
