// scan's tests; exscan.cpp includes this file with GCL_TEST_EXCLUSIVE_SCAN defined, and the same
// tests check exscan (rank 0 of an exscan keeps its data).
#if defined(GCL_TEST_EXCLUSIVE_SCAN)
#define BOOST_TEST_MODULE collective_exscan
#include <gcl/collective/exscan.hpp>
#else
#define BOOST_TEST_MODULE collective_scan
#include <gcl/collective/scan.hpp>
#endif
#include <gcl/algorithm/recursive_doubling.hpp>

#include <bit>
#include <utility>

#include "support.hpp"

using namespace gcl_test;

namespace {

#if defined(GCL_TEST_EXCLUSIVE_SCAN)
constexpr bool exclusive = true;
// The collective under test, with the arguments a test passes.
constexpr auto scan_under_test = [](auto&&... a) { gcl::exscan(std::forward<decltype(a)>(a)...); };
#else
constexpr bool exclusive = false;
constexpr auto scan_under_test = [](auto&&... a) { gcl::scan(std::forward<decltype(a)>(a)...); };
#endif

// Every length, with an operator and data: the first difference or "". Rank 0 of an exscan
// keeps its data.
template <class T, class Comm, class Op, class Make>
std::string sweep(Comm& comm, Op op, Make make) {
  int const p = comm.size(), me = comm.rank();
  for (std::size_t n : lengths(p, 1001)) {
    std::vector<T> v(n), want(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = make(me, i);
      int const last = exclusive ? me - 1 : me;
      want[i] = last < 0 ? make(me, i) : make(0, i);
      for (int r = 1; r <= last; ++r) want[i] = op(want[i], make(r, i));
    }
    scan_under_test(comm, v, op, gcl::recursive_doubling{});
    if (auto d = diff(v, want); !d.empty()) return "n=" + std::to_string(n) + ": " + d;
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_size_and_operator_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) {
      return sweep<int>(comm, gcl::sum{}, value<int>) +
             sweep<float>(comm, gcl::sum{}, value<float>) +
             sweep<int>(comm, gcl::max{}, value<int>) +
             sweep<affine>(comm, compose{}, affine_value);  // not commutative
    });
}

BOOST_AUTO_TEST_CASE(a_single_value) {
  run(5, "value", [](auto& comm) {
    int x = comm.rank() + 1;
    scan_under_test(comm, x);
    int const r = comm.rank(),
              want = exclusive ? (r == 0 ? 1 : r * (r + 1) / 2) : (r + 1) * (r + 2) / 2;
    return x == want ? std::string()
                     : "got " + std::to_string(x) + ", want " + std::to_string(want);
  });
}

BOOST_AUTO_TEST_CASE(messages_are_those_of_doc_algorithms_md) {
  // L P - (2^L - 1) messages of the whole vector (L = ceil(log2 P)), empty ones included; L
  // rounds when P is a power of two, at most L otherwise.
  for (int p : world_sizes)
    for (std::size_t n : {std::size_t{0}, std::size_t{3}}) {
      auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [n](auto& comm) {
        std::vector<int> v(n, 1);
        scan_under_test(comm, v);
        return comm.transport().stats();
      });
      gcl::transport_stats total;
      for (auto const& s : stats) total += s;
      int const l = p == 1 ? 0 : std::bit_width(static_cast<unsigned>(p - 1));
      auto const messages = static_cast<std::uint64_t>(l * p - ((1 << l) - 1));
      BOOST_TEST(total.messages_sent == messages, "P=" << p << " n=" << n);
      BOOST_TEST(total.bytes_sent == messages * n * sizeof(int), "P=" << p << " n=" << n);
      BOOST_TEST(total.rounds <= l, "P=" << p);
      if (std::has_single_bit(static_cast<unsigned>(p))) BOOST_TEST(total.rounds == l, "P=" << p);
    }
}

BOOST_AUTO_TEST_CASE(different_counts_fail) {
  for (int p : {2, 3, 4, 8}) {
    auto what = expect_mismatch(p, [](auto& comm) {
      std::vector<int> v(comm.rank() == 1 ? 5 : 4);
      scan_under_test(comm, v);
    });
    check_names_two_ranks(what, 1);
  }
}
