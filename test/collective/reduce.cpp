#define BOOST_TEST_MODULE collective_reduce
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/reduce.hpp>

#include <cstdint>

#include "support.hpp"

using namespace gcl_test;

template <class T>
void sweep_sum() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p))
      for (int root : {0, p / 2, p - 1})
        run(p,
            "P=" + std::to_string(p) + " n=" + std::to_string(n) + " root=" + std::to_string(root),
            [&](auto& comm) {
              std::vector<T> v(n), mine(n), want(n, T{});
              for (std::size_t i = 0; i < n; ++i) {
                v[i] = mine[i] = value<T>(comm.rank(), i);
                for (int r = 0; r < p; ++r) want[i] += value<T>(r, i);
              }
              gcl::reduce(comm, v, root, gcl::sum{}, gcl::tree{});
              // The root gets the sum; every other rank's data is left unchanged.
              return diff(v, comm.rank() == root ? want : mine);
            });
}

BOOST_AUTO_TEST_CASE(sum_float_every_root_kind) {
  sweep_sum<float>();
}
BOOST_AUTO_TEST_CASE(sum_int_every_root_kind) {
  sweep_sum<int>();
}

BOOST_AUTO_TEST_CASE(non_commutative_keeps_rank_order_for_every_root) {
  // op(a, b) = a * 10 + b over digits, modulo nothing: associative? No -- use string-free
  // affine maps instead: f_r(x) = a_r x + b_r composed in rank order, as pairs (a, b).
  struct affine {
    std::int64_t a, b;
    bool operator==(affine const&) const = default;
  };
  // (f then g)(x) = g(f(x)) = ga (fa x + fb) + gb: associative, not commutative.
  auto compose = [](affine f, affine g) { return affine{g.a * f.a, g.a * f.b + g.b}; };
  auto fn = [](int r, std::size_t i) {
    return affine{std::int64_t(r % 2 + 1), std::int64_t(r + i)};
  };
  for (int p : world_sizes)
    for (int root = 0; root < p; ++root)
      run(p, "P=" + std::to_string(p) + " root=" + std::to_string(root), [&](auto& comm) {
        std::size_t const n = 9;
        std::vector<affine> v(n), mine(n), want(n, affine{1, 0});
        for (std::size_t i = 0; i < n; ++i) {
          v[i] = mine[i] = fn(comm.rank(), i);
          for (int r = 0; r < p; ++r) want[i] = compose(want[i], fn(r, i));
        }
        gcl::reduce(comm, v, root, compose, gcl::tree{});
        auto const& expect = comm.rank() == root ? want : mine;
        for (std::size_t i = 0; i < n; ++i)
          if (!(v[i] == expect[i]))
            return "element " + std::to_string(i) + ": got (" + std::to_string(v[i].a) + ", " +
                   std::to_string(v[i].b) + "), want (" + std::to_string(expect[i].a) + ", " +
                   std::to_string(expect[i].b) + ")";
        return std::string();
      });
}

BOOST_AUTO_TEST_CASE(root_out_of_range_is_a_usage_error) {
  for (int bad : {-1, 3, 7}) {
    try {
      gcl::spawn<gcl::inproc_transport>(3, [bad](auto& comm) {
        std::vector<int> v(4, 1);
        gcl::reduce(comm, v, bad);
      });
      BOOST_TEST(false, "no error for root " << bad);
    } catch (gcl::usage_error const& e) {
      std::string what = e.what();
      BOOST_TEST(what.find("root " + std::to_string(bad)) != std::string::npos, what);
      BOOST_TEST(what.find("world size 3") != std::string::npos, what);
      BOOST_TEST(what.find("reduce") != std::string::npos, what);
    }
  }
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 5, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::vector<int> v(comm.rank() == 1 ? 7 : 6, 1);
      gcl::reduce(comm, v, 0);
    });
    check_names_two_ranks(what, 1);
  }
}

BOOST_AUTO_TEST_CASE(different_roots_fail_or_time_out) {
  auto what = expect_mismatch_or_timeout(4, [&](auto& comm) {
    std::vector<int> v(6, 1);
    gcl::reduce(comm, v, comm.rank() == 3 ? 1 : 0);
  });
  BOOST_TEST(what.find("root") != std::string::npos, what);
}
