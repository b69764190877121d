#define BOOST_TEST_MODULE collective_reduce_scatter
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/collective/reduce_scatter.hpp>

#include "support.hpp"

using namespace gcl_test;

template <class T, class Alg = gcl::ring>
void sweep() {
  for (int p : world_sizes)
    for (std::size_t n : lengths(p))
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        std::vector<T> in(n), copy(n);
        for (std::size_t i = 0; i < n; ++i) in[i] = copy[i] = value<T>(comm.rank(), i);
        gcl::detail::chunk_layout layout{n, p};
        std::size_t off = layout.offset(comm.rank()), size = layout.size(comm.rank());
        std::vector<T> out(gcl::reduce_scatter_size(n, comm.rank(), p)), want(size, T{});
        for (std::size_t i = 0; i < size; ++i)
          for (int r = 0; r < p; ++r) want[i] += value<T>(r, off + i);
        gcl::reduce_scatter(comm, in, out, gcl::sum{}, Alg{});
        return diff(out, want) + diff(in, copy);  // `in` is left unchanged
      });
}

BOOST_AUTO_TEST_CASE(float_every_size) {
  sweep<float>();
}
BOOST_AUTO_TEST_CASE(int_every_size) {
  sweep<int>();
}

BOOST_AUTO_TEST_CASE(direct_int_every_size) {
  sweep<int, gcl::direct>();
}

BOOST_AUTO_TEST_CASE(direct_keeps_rank_order_for_a_non_commutative_operator) {
  // The ring needs a commutative operator; direct folds chunk r on rank r in rank order.
  for (int p : world_sizes)
    for (std::size_t n : lengths(p, 1001))
      run(p, "P=" + std::to_string(p) + " n=" + std::to_string(n), [&](auto& comm) {
        std::vector<affine> in(n);
        for (std::size_t i = 0; i < n; ++i) in[i] = affine_value(comm.rank(), i);
        gcl::detail::chunk_layout layout{n, p};
        std::size_t off = layout.offset(comm.rank()), size = layout.size(comm.rank());
        std::vector<affine> out(size), want(size);
        for (std::size_t i = 0; i < size; ++i) {
          want[i] = affine_value(0, off + i);
          for (int r = 1; r < p; ++r) want[i] = compose{}(want[i], affine_value(r, off + i));
        }
        gcl::reduce_scatter(comm, in, out, compose{}, gcl::direct{});
        return diff(out, want);
      });
}

BOOST_AUTO_TEST_CASE(direct_messages_are_those_of_doc_algorithms_md) {
  // P (P - 1) messages of one chunk each, empty chunks included.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      std::vector<int> in(3), out(gcl::reduce_scatter_size(3, comm.rank(), comm.size()));
      gcl::reduce_scatter(comm, in, out, gcl::sum{}, gcl::direct{});
      return comm.transport().stats();
    });
    gcl::transport_stats total;
    for (auto const& s : stats) total += s;
    BOOST_TEST(total.messages_sent == static_cast<std::uint64_t>(p * (p - 1)), "P=" << p);
    BOOST_TEST(total.rounds == (p > 1 ? 1 : 0), "P=" << p);
    BOOST_TEST(total.bytes_sent == static_cast<std::uint64_t>(p - 1) * 3 * sizeof(int), "P=" << p);
  }
}

BOOST_AUTO_TEST_CASE(uneven_chunk_sizes_are_documented_ones) {
  // 10 elements over 4 ranks: 3 3 2 2.
  BOOST_TEST(gcl::reduce_scatter_size(10, 0, 4) == 3u);
  BOOST_TEST(gcl::reduce_scatter_size(10, 1, 4) == 3u);
  BOOST_TEST(gcl::reduce_scatter_size(10, 2, 4) == 2u);
  BOOST_TEST(gcl::reduce_scatter_size(10, 3, 4) == 2u);
  BOOST_TEST(gcl::reduce_scatter_size(2, 3, 4) == 0u);
}

BOOST_AUTO_TEST_CASE(wrong_out_size_is_a_usage_error) {
  try {
    gcl::spawn<gcl::inproc_transport>(4, [](auto& comm) {
      std::vector<int> in(10),
          out(comm.rank() == 2 ? 3 : gcl::reduce_scatter_size(10, comm.rank(), 4));
      gcl::reduce_scatter(comm, in, out);
    });
    BOOST_TEST(false);
  } catch (gcl::usage_error const& e) {
    std::string what = e.what();
    BOOST_TEST(what.find("rank 2: reduce_scatter: out has 3 elements, but 2 are required") !=
                   std::string::npos,
               what);
  }
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [&](auto& comm) {
      std::size_t n = comm.rank() == 1 ? 17 : 16;
      std::vector<int> in(n), out(gcl::reduce_scatter_size(n, comm.rank(), p));
      gcl::reduce_scatter(comm, in, out);
    });
    check_names_two_ranks(what, 1);
  }
}
