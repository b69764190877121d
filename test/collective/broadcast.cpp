#define BOOST_TEST_MODULE collective_broadcast
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/broadcast.hpp>

#include "support.hpp"

using namespace gcl_test;

template <class T>
void sweep() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p))
      for (int root : {0, p / 2, p - 1})
        run(p,
            "P=" + std::to_string(p) + " n=" + std::to_string(n) + " root=" + std::to_string(root),
            [&](auto& comm) {
              std::vector<T> v(n), want(n);
              for (std::size_t i = 0; i < n; ++i) {
                v[i] = value<T>(comm.rank(), i);
                want[i] = value<T>(root, i);
              }
              gcl::broadcast(comm, v, root, gcl::tree{});
              return diff(v, want);
            });
}

BOOST_AUTO_TEST_CASE(float_every_size_and_root_kind) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size_and_root_kind) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(scalar_and_default_algorithm) {
  run(7, "P=7", [](auto& comm) {
    double x = comm.rank() == 4 ? 2.5 : 0.0;
    gcl::broadcast(comm, x, 4);
    return x == 2.5 ? std::string() : "got " + std::to_string(x);
  });
}

BOOST_AUTO_TEST_CASE(root_out_of_range_is_a_usage_error) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<gcl::inproc_transport>(2,
                                                          [](auto& comm) {
                                                            std::vector<int> v(1);
                                                            gcl::broadcast(comm, v, 2);
                                                          }),
                        gcl::usage_error, [](gcl::usage_error const& e) {
                          return std::string(e.what()).find(
                                     "root 2 is out of range for world "
                                     "size 2") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 7}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::vector<int> v(comm.rank() == p - 1 ? 3 : 4);
      gcl::broadcast(comm, v, 0);
    });
    check_names_two_ranks(what, p - 1);
  }
}
