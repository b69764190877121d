#define BOOST_TEST_MODULE collective_reduce_scatterv
#include <gcl/algorithm/direct.hpp>
#include <gcl/collective/reduce_scatterv.hpp>

#include "support.hpp"

using namespace gcl_test;

namespace {

// Every count pattern, with sum over int and float and with a non-commutative operator.
template <class T, class Comm, class Op, class Make>
std::string sweep(Comm& comm, Op op, Make make) {
  int const p = comm.size(), me = comm.rank();
  for (auto const& counts : count_patterns(p)) {
    std::size_t const n = gcl::detail::sum_of(counts);
    std::size_t off = 0;
    for (int r = 0; r < me; ++r) off += counts[static_cast<std::size_t>(r)];
    std::vector<T> in(n), copy(n), out(counts[static_cast<std::size_t>(me)]), want(out.size());
    for (std::size_t i = 0; i < n; ++i) in[i] = copy[i] = make(me, i);
    for (std::size_t i = 0; i < want.size(); ++i) {
      want[i] = make(0, off + i);
      for (int r = 1; r < p; ++r) want[i] = op(want[i], make(r, off + i));
    }
    gcl::reduce_scatterv(comm, in, out, counts, op, gcl::direct{});
    if (auto d = diff(out, want) + diff(in, copy); !d.empty())
      return "counts " + text(counts) + ": " + d;
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_size_and_count_pattern_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) {
      return sweep<int>(comm, gcl::sum{}, value<int>) +
             sweep<float>(comm, gcl::sum{}, value<float>) +
             sweep<affine>(comm, compose{}, affine_value);
    });
}

BOOST_AUTO_TEST_CASE(messages_are_those_of_doc_algorithms_md) {
  // P (P - 1) messages: every rank's block r to rank r, empty ones included.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 0);
      counts[0] = 5;
      std::vector<int> in(5), out(counts[static_cast<std::size_t>(comm.rank())]);
      gcl::reduce_scatterv(comm, in, out, counts);
      return comm.transport().stats();
    });
    gcl::transport_stats total;
    for (auto const& s : stats) total += s;
    BOOST_TEST(total.messages_sent == static_cast<std::uint64_t>(p * (p - 1)), "P=" << p);
    BOOST_TEST(total.rounds == (p > 1 ? 1 : 0), "P=" << p);
    BOOST_TEST(total.bytes_sent == static_cast<std::uint64_t>(p - 1) * 5 * sizeof(int), "P=" << p);
  }
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  auto fails = [](auto f, std::string const& part) {
    try {
      gcl::spawn<gcl::inproc_transport>(3, f);
      BOOST_TEST(false, "no usage_error: " << part);
    } catch (gcl::usage_error const& e) {
      BOOST_TEST(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
  };
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(5), out(counts[static_cast<std::size_t>(comm.rank())]);
        gcl::reduce_scatterv(comm, in, out, counts);
      },
      "reduce_scatterv: in has 5 elements, but 6 are required (the sum of counts)");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(6);
        std::vector<int> out(comm.rank() == 1 ? 1 : counts[static_cast<std::size_t>(comm.rank())]);
        gcl::reduce_scatterv(comm, in, out, counts);
      },
      "rank 1: reduce_scatterv: out has 1 elements, but 2 are required (counts[1])");
}

namespace {

template <class Transport>
void different_counts_fail(int about) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch_over<Transport>(p, [about](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 2);
      if (comm.rank() == 1) counts[static_cast<std::size_t>(about % comm.size())] = 5;
      std::vector<int> in(gcl::detail::sum_of(counts));
      std::vector<int> out(counts[static_cast<std::size_t>(comm.rank())]);
      gcl::reduce_scatterv(comm, in, out, counts);
    });
    check_names_two_ranks(what, 1);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::inproc_transport>(1);
  different_counts_fail<gcl::inproc_transport>(3);
}
#if defined(GCL_TEST_TCP)
BOOST_AUTO_TEST_CASE(tcp_different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::tcp_transport>(1);
  different_counts_fail<gcl::tcp_transport>(3);
}
#endif
