#define BOOST_TEST_MODULE collective_gather
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/gather.hpp>

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
              std::vector<T> in(n), out(at_root ? n * p : 0, T{-1}), want(out.size());
              for (std::size_t i = 0; i < n; ++i) in[i] = value<T>(comm.rank(), i);
              if (at_root)
                for (int r = 0; r < p; ++r)
                  for (std::size_t i = 0; i < n; ++i) want[r * n + i] = value<T>(r, i);
              gcl::gather(comm, in, out, root, gcl::tree{});
              return diff(out, want);
            });
}

BOOST_AUTO_TEST_CASE(float_every_size_and_root_kind) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size_and_root_kind) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(every_root_of_seven) {
  for (int root = 0; root < 7; ++root)
    run(7, "root=" + std::to_string(root), [&](auto& comm) {
      std::vector<int> out(comm.rank() == root ? 7 : 0);
      gcl::gather(comm, comm.rank() + 100, out, root);
      std::vector<int> want;
      if (comm.rank() == root) want = {100, 101, 102, 103, 104, 105, 106};
      return diff(out, want);
    });
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<gcl::inproc_transport>(3,
                                                          [](auto& comm) {
                                                            std::vector<int> in(2), out(5);
                                                            gcl::gather(comm, in, out, 1);
                                                          }),
                        gcl::usage_error, [](gcl::usage_error const& e) {
                          return std::string(e.what()).find(
                                     "rank 1: gather: out on the root has 5 elements, but 6 "
                                     "are required") != std::string::npos;
                        });
  BOOST_CHECK_THROW(gcl::spawn<gcl::inproc_transport>(3,
                                                      [](auto& comm) {
                                                        std::vector<int> in(2), out(6);
                                                        gcl::gather(comm, in, out, 3);
                                                      }),
                    gcl::usage_error);
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::size_t n = comm.rank() == 1 ? 3 : 2;
      std::vector<int> in(n), out(comm.rank() == 0 ? n * p : 0);
      gcl::gather(comm, in, out, 0);
    });
    check_names_two_ranks(what, 1);
  }
}
