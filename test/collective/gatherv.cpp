#define BOOST_TEST_MODULE collective_gatherv
#include <gcl/algorithm/direct.hpp>
#include <gcl/collective/gatherv.hpp>

#include "support.hpp"

using namespace gcl_test;

namespace {

// Every count pattern and root kind, in int and in float; the first difference or "".
template <class T, class Comm>
std::string sweep(Comm& comm) {
  int const p = comm.size(), me = comm.rank();
  for (auto const& counts : count_patterns(p))
    for (int root : {0, p / 2, p - 1}) {
      bool const at_root = me == root;
      std::vector<T> in(counts[static_cast<std::size_t>(me)]);
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = value<T>(me, i);
      std::vector<T> out(at_root ? gcl::detail::sum_of(counts) : 0, T{-1}), want;
      if (at_root)
        for (int r = 0; r < p; ++r)
          for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i)
            want.push_back(value<T>(r, i));
      gcl::gatherv(comm, in, out, counts, root, gcl::direct{});
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
  // P - 1 messages, one from every other rank to the root, empty ones included.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 0);
      counts[0] = 5;
      std::vector<int> in(counts[static_cast<std::size_t>(comm.rank())]);
      std::vector<int> out(comm.rank() == 1 % comm.size() ? 5 : 0);
      gcl::gatherv(comm, in, out, counts, 1 % comm.size());
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
        std::vector<std::size_t> counts{1, 1};
        std::vector<int> in(1), out(2);
        gcl::gatherv(comm, in, out, counts, 0);
      },
      "gatherv: counts has 2 entries, but one per rank is required (world size 3)");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(comm.rank() == 1 ? 1 : counts[static_cast<std::size_t>(comm.rank())]);
        std::vector<int> out(comm.rank() == 0 ? 6 : 0);
        gcl::gatherv(comm, in, out, counts, 0);
      },
      "gatherv: in has 1 elements, but 2 are required (counts[1])");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> counts{1, 2, 3};
        std::vector<int> in(counts[static_cast<std::size_t>(comm.rank())]), out(5);
        gcl::gatherv(comm, in, out, counts, 2);
      },
      "rank 2: gatherv: out on the root has 5 elements, but 6 are required (the sum of counts)");
}

namespace {

// Rank 1 disagrees with the others about rank `about`'s count, and passes an `in` of the size
// its own counts say: whether or not that changes the size of its message, the job fails with a
// mismatch naming both ranks, never a hang or a short read.
template <class Transport>
void different_counts_fail(int about) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch_over<Transport>(p, [about](auto& comm) {
      std::vector<std::size_t> counts(static_cast<std::size_t>(comm.size()), 2);
      if (comm.rank() == 1) counts[static_cast<std::size_t>(about % comm.size())] = 5;
      std::vector<int> in(counts[static_cast<std::size_t>(comm.rank())]);
      std::vector<int> out(comm.rank() == 0 ? gcl::detail::sum_of(counts) : 0);
      gcl::gatherv(comm, in, out, counts, 0);
    });
    check_names_two_ranks(what, 1);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::inproc_transport>(1);  // its own count: a message of another size
  different_counts_fail<gcl::inproc_transport>(3);  // another rank's: the same size
}
#if defined(GCL_TEST_TCP)
BOOST_AUTO_TEST_CASE(tcp_different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::tcp_transport>(1);
  different_counts_fail<gcl::tcp_transport>(3);
}
#endif
