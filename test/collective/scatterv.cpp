#define BOOST_TEST_MODULE collective_scatterv
#include <gcl/algorithm/direct.hpp>
#include <gcl/collective/scatterv.hpp>

#include "support.hpp"

using namespace gcl_test;

namespace {

template <class T, class Comm>
std::string sweep(Comm& comm) {
  int const p = comm.size(), me = comm.rank();
  for (auto const& counts : count_patterns(p))
    for (int root : {0, p / 2, p - 1}) {
      std::vector<T> in;
      if (me == root)
        for (int r = 0; r < p; ++r)
          for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i)
            in.push_back(value<T>(r, i));
      std::vector<T> out(counts[static_cast<std::size_t>(me)], T{-1}), want(out.size());
      for (std::size_t i = 0; i < want.size(); ++i) want[i] = value<T>(me, i);
      gcl::scatterv(comm, in, out, counts, root, gcl::direct{});
      if (auto d = diff(out, want); !d.empty())
        return "counts " + text(counts) + " root " + std::to_string(root) + ": " + d;
    }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_size_count_pattern_and_root_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p),
                   [](auto& comm) { return sweep<int>(comm) + sweep<float>(comm); });
}

BOOST_AUTO_TEST_CASE(messages_are_those_of_doc_algorithms_md) {
  // P - 1 messages, one from the root to every other rank, empty ones included.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 0);
      counts[0] = 5;
      std::vector<int> in(comm.rank() == comm.size() - 1 ? 5 : 0);
      std::vector<int> out(counts[static_cast<std::size_t>(comm.rank())]);
      gcl::scatterv(comm, in, out, counts, comm.size() - 1);
      return comm.transport().stats();
    });
    gcl::transport_stats total;
    for (auto const& s : stats) total += s;
    BOOST_TEST(total.messages_sent == static_cast<std::uint64_t>(p - 1), "P=" << p);
    BOOST_TEST(total.rounds == (p > 1 ? 1 : 0), "P=" << p);
    BOOST_TEST(total.bytes_sent == (p > 1 ? 5 * sizeof(int) : 0u), "P=" << p);
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
        std::vector<std::size_t> counts{1, 1, 1, 1};
        std::vector<int> in(4), out(1);
        gcl::scatterv(comm, in, out, counts, 0);
      },
      "scatterv: counts has 4 entries, but one per rank is required (world size 3)");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(comm.rank() == 0 ? 6 : 0);
        std::vector<int> out(comm.rank() == 1 ? 1 : counts[static_cast<std::size_t>(comm.rank())]);
        gcl::scatterv(comm, in, out, counts, 0);
      },
      "scatterv: out has 1 elements, but 2 are required (counts[1])");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(7), out(counts[static_cast<std::size_t>(comm.rank())]);
        gcl::scatterv(comm, in, out, counts, 1);
      },
      "rank 1: scatterv: in on the root has 7 elements, but 6 are required (the sum of counts)");
}

namespace {

template <class Transport>
void different_counts_fail(int about) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch_over<Transport>(p, [about](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 2);
      if (comm.rank() == 1) counts[static_cast<std::size_t>(about % comm.size())] = 5;
      std::vector<int> in(comm.rank() == 0 ? gcl::detail::sum_of(counts) : 0);
      std::vector<int> out(counts[static_cast<std::size_t>(comm.rank())]);
      gcl::scatterv(comm, in, out, counts, 0);
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
