#define BOOST_TEST_MODULE collective_all_to_allv
#include <gcl/algorithm/direct.hpp>
#include <gcl/collective/all_to_allv.hpp>

#include "support.hpp"

using namespace gcl_test;

namespace {

// Elements rank s sends to rank d, for each of a few patterns: none at all, (s + 2d) mod 4
// (zeros scattered), and one large block among zeros and ones.
std::size_t count(int pattern, int s, int d, int p) {
  switch (pattern) {
    case 0:
      return 0;
    case 1:
      return static_cast<std::size_t>((s + 2 * d) % 4);
    default:
      return s == 0 && d == p - 1 ? 1001 : static_cast<std::size_t>((s * d) % 2);
  }
}

template <class T, class Comm>
std::string sweep(Comm& comm) {
  int const p = comm.size(), me = comm.rank();
  auto const up = static_cast<std::size_t>(p);
  for (int pattern = 0; pattern < 3; ++pattern) {
    std::vector<std::size_t> send(up), recv(up);
    std::vector<T> in, want;
    for (int r = 0; r < p; ++r) {
      send[static_cast<std::size_t>(r)] = count(pattern, me, r, p);
      recv[static_cast<std::size_t>(r)] = count(pattern, r, me, p);
      for (std::size_t i = 0; i < count(pattern, me, r, p); ++i)
        in.push_back(value<T>(me, static_cast<std::size_t>(r) * 37 + i));
      for (std::size_t i = 0; i < count(pattern, r, me, p); ++i)
        want.push_back(value<T>(r, static_cast<std::size_t>(me) * 37 + i));
    }
    std::vector<T> out(want.size(), T{-1});
    gcl::all_to_allv(comm, in, send, out, recv, gcl::direct{});
    if (auto d = diff(out, want); !d.empty())
      return "pattern " + std::to_string(pattern) + " send " + text(send) + ": " + d;
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_size_and_count_pattern_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p),
                   [](auto& comm) { return sweep<int>(comm) + sweep<float>(comm); });
}

BOOST_AUTO_TEST_CASE(messages_are_those_of_doc_algorithms_md) {
  // P (P - 1) messages: every block to its rank, empty ones included.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      auto const up = static_cast<std::size_t>(comm.size());
      std::vector<std::size_t> send(up, 0), recv(up, 0);
      if (comm.rank() == 0) send.back() = 5;
      if (comm.rank() == comm.size() - 1) recv.front() = 5;
      std::vector<int> in(gcl::detail::sum_of(send)), out(gcl::detail::sum_of(recv));
      gcl::all_to_allv(comm, in, send, out, recv);
      return comm.transport().stats();
    });
    gcl::transport_stats total;
    for (auto const& s : stats) total += s;
    BOOST_TEST(total.messages_sent == static_cast<std::uint64_t>(p * (p - 1)), "P=" << p);
    BOOST_TEST(total.rounds == p - 1, "P=" << p);  // step k waits for step k - 1
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
        std::vector<std::size_t> send{1, 1, 1}, recv{1, 1};
        std::vector<int> in(3), out(2);
        gcl::all_to_allv(comm, in, send, out, recv);
      },
      "all_to_allv: recv_counts has 2 entries, but one per rank is required (world size 3)");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> send{1, 1, 1}, recv{1, 1, 1};
        std::vector<int> in(4), out(3);
        gcl::all_to_allv(comm, in, send, out, recv);
      },
      "all_to_allv: in has 4 elements, but 3 are required (the sum of send_counts)");
  fails(
      [](auto& comm) {
        std::vector<std::size_t> send{1, 1, 1}, recv{2, 2, 2};
        std::vector<int> in(3), out(6);
        gcl::all_to_allv(comm, in, send, out, recv);
      },
      "all_to_allv: the block it keeps has 2 elements, but 1 are required");
}

namespace {

// Rank 1 expects one element more from rank 0 than rank 0 sends it: a mismatch naming both.
template <class Transport>
void different_counts_fail() {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch_over<Transport>(p, [](auto& comm) {
      auto const up = static_cast<std::size_t>(comm.size());
      std::vector<std::size_t> send(up, 2), recv(up, 2);
      if (comm.rank() == 1) recv[0] = 3;
      std::vector<int> in(gcl::detail::sum_of(send)), out(gcl::detail::sum_of(recv));
      gcl::all_to_allv(comm, in, send, out, recv);
    });
    check_names_two_ranks(what, 1);
    BOOST_TEST(what.find("rank 0") != std::string::npos, what);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::inproc_transport>();
}
#if defined(GCL_TEST_TCP)
BOOST_AUTO_TEST_CASE(tcp_different_counts_fail_with_a_mismatch) {
  different_counts_fail<gcl::tcp_transport>();
}
#endif
