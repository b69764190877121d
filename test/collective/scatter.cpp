#define BOOST_TEST_MODULE collective_scatter
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/scatter.hpp>

#include "support.hpp"

using namespace gcl_test;

template <class T>
void sweep() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p, large / static_cast<std::size_t>(p)))
      for (int root : {0, p / 2, p - 1})
        run(p,
            "P=" + std::to_string(p) + " n=" + std::to_string(n) + " root=" + std::to_string(root),
            [&](auto& comm) {
              bool at_root = comm.rank() == root;
              std::vector<T> in(at_root ? n * p : 0), out(n, T{-1}), want(n);
              if (at_root)
                for (int r = 0; r < p; ++r)
                  for (std::size_t i = 0; i < n; ++i) in[r * n + i] = value<T>(r, i);
              for (std::size_t i = 0; i < n; ++i) want[i] = value<T>(comm.rank(), i);
              gcl::scatter(comm, in, out, root, gcl::tree{});
              return diff(out, want);
            });
}

BOOST_AUTO_TEST_CASE(float_every_size_and_root_kind) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size_and_root_kind) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(every_root_of_five_with_scalar_out) {
  for (int root = 0; root < 5; ++root)
    run(5, "root=" + std::to_string(root), [&](auto& comm) {
      std::vector<int> in;
      if (comm.rank() == root) in = {10, 11, 12, 13, 14};
      int mine = -1;
      gcl::scatter(comm, in, mine, root);
      return mine == 10 + comm.rank() ? std::string() : "got " + std::to_string(mine);
    });
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<gcl::inproc_transport>(4,
                                        [](auto& comm) {
                                          std::vector<int> in(comm.rank() == 2 ? 7 : 0), out(2);
                                          gcl::scatter(comm, in, out, 2);
                                        }),
      gcl::usage_error, [](gcl::usage_error const& e) {
        return std::string(e.what()).find(
                   "rank 2: scatter: in on the root has 7 elements, but 8 are "
                   "required (world size 4 x out.size() 2)") != std::string::npos;
      });
  BOOST_CHECK_THROW(gcl::spawn<gcl::inproc_transport>(2,
                                                      [](auto& comm) {
                                                        std::vector<int> in(2), out(1);
                                                        gcl::scatter(comm, in, out, -1);
                                                      }),
                    gcl::usage_error);
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::size_t n = comm.rank() == 1 ? 3 : 2;
      std::vector<int> in(comm.rank() == 0 ? n * p : 0), out(n);
      gcl::scatter(comm, in, out, 0);
    });
    check_names_two_ranks(what, 1);
  }
}
