#define BOOST_TEST_MODULE collective_out_of_place
// The out-of-place forms of all_reduce, reduce and broadcast (`in` read, `out` written), over
// every transport: the results of the in-place forms, `in` unchanged, ranks free to mix the
// two forms, and the same messages.
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/reduce.hpp>

#include "support.hpp"

using namespace gcl_test;

namespace {

template <class T, class Make>
std::vector<T> data(int r, std::size_t n, Make make) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = make(r, i);
  return v;
}

// op over ranks 0..P-1 in rank order.
template <class T, class Op, class Make>
std::vector<T> reduced(int p, std::size_t n, Op op, Make make) {
  auto want = data<T>(0, n, make);
  for (int r = 1; r < p; ++r)
    for (std::size_t i = 0; i < n; ++i) want[i] = op(want[i], make(r, i));
  return want;
}

template <class Comm, class Alg>
std::string all_reduce_sweep(Comm& comm, Alg alg) {
  int const p = comm.size(), me = comm.rank();
  for (std::size_t n : lengths(p, 1001)) {
    auto const in = data<int>(me, n, value<int>);
    auto const want = reduced<int>(p, n, gcl::sum{}, value<int>);
    std::vector<int> out(n, -1);
    gcl::all_reduce(comm, in, out, gcl::sum{}, alg);
    std::string d = diff(out, want) + diff(in, data<int>(me, n, value<int>));
    // Odd ranks in place, even ranks out of place: one call to all of them.
    std::vector<int> mixed = in, result(n, -1);
    if (me % 2 == 1)
      gcl::all_reduce(comm, mixed, gcl::sum{}, alg);
    else
      gcl::all_reduce(comm, mixed, result, gcl::sum{}, alg);
    d += diff(me % 2 == 1 ? mixed : result, want);
    // The same range as in and out: the in-place form.
    std::vector<int> same = in;
    gcl::all_reduce(comm, same, same, gcl::sum{}, alg);
    d += diff(same, want);
    if (!d.empty()) return std::string(Alg::name) + " n=" + std::to_string(n) + ": " + d;
  }
  return "";
}

template <class T, class Comm, class Op, class Make>
std::string reduce_sweep(Comm& comm, Op op, Make make) {
  int const p = comm.size(), me = comm.rank();
  for (std::size_t n : lengths(p, 1001))
    for (int root : {0, p / 2, p - 1}) {
      auto const in = data<T>(me, n, make);
      std::vector<T> out(me == root ? n : 0), want;
      if (me == root) want = reduced<T>(p, n, op, make);
      if (me == p - 1 && me != root) {  // in place here: its data must stay as it was
        auto mine = in;
        gcl::reduce(comm, mine, root, op);
        out = mine, want = in;
      } else {
        gcl::reduce(comm, in, out, root, op);
      }
      if (auto d = diff(out, want) + diff(in, data<T>(me, n, make)); !d.empty())
        return "reduce n=" + std::to_string(n) + " root " + std::to_string(root) + ": " + d;
    }
  return "";
}

template <class Comm, class Alg>
std::string broadcast_sweep(Comm& comm, Alg alg) {
  int const p = comm.size(), me = comm.rank();
  for (std::size_t n : lengths(p, 1001))
    for (int root : {0, p / 2, p - 1}) {
      auto const in = me == root ? data<int>(me, n, value<int>) : std::vector<int>{};
      std::vector<int> out(n, -1);
      gcl::broadcast(comm, in, out, root, alg);
      if (auto d = diff(out, data<int>(root, n, value<int>)); !d.empty())
        return std::string(Alg::name) + " broadcast n=" + std::to_string(n) + " root " +
               std::to_string(root) + ": " + d;
    }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(all_reduce_every_size_and_algorithm_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) {
      return all_reduce_sweep(comm, gcl::by_size{}) + all_reduce_sweep(comm, gcl::ring{}) +
             all_reduce_sweep(comm, gcl::tree{}) + all_reduce_sweep(comm, gcl::direct{});
    });
}

BOOST_AUTO_TEST_CASE(reduce_every_size_and_root_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) {
      return reduce_sweep<int>(comm, gcl::sum{}, value<int>) +
             reduce_sweep<affine>(comm, compose{}, affine_value);  // rank order kept
    });
}

BOOST_AUTO_TEST_CASE(broadcast_every_size_and_root_over_every_transport) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) {
      return broadcast_sweep(comm, gcl::tree{}) + broadcast_sweep(comm, gcl::direct{});
    });
}

BOOST_AUTO_TEST_CASE(the_messages_of_the_in_place_forms) {
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      int const root = comm.size() / 2;
      std::vector<float> v(37, 1.0f), out(37);
      std::vector<gcl::transport_stats> s;
      auto step = [&](auto call) {
        comm.transport().reset();
        call();
        s.push_back(comm.transport().stats());
      };
      step([&] { gcl::all_reduce(comm, v); });
      step([&] { gcl::all_reduce(comm, v, out); });
      step([&] { gcl::reduce(comm, v, root); });
      step([&] { gcl::reduce(comm, v, out, root); });
      step([&] { gcl::broadcast(comm, v, root); });
      step([&] { gcl::broadcast(comm, v, out, root); });
      return s;
    });
    for (int r = 0; r < p; ++r)
      for (std::size_t k = 0; k < 6; k += 2) {
        auto const& a = stats[static_cast<std::size_t>(r)][k];
        auto const& b = stats[static_cast<std::size_t>(r)][k + 1];
        BOOST_TEST((a.messages_sent == b.messages_sent && a.bytes_sent == b.bytes_sent &&
                    a.messages_received == b.messages_received && a.rounds == b.rounds),
                   "P=" << p << " rank " << r << " call " << k);
      }
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
        std::vector<int> in(4), out(comm.rank() == 1 ? 3 : 4);
        gcl::all_reduce(comm, in, out);
      },
      "rank 1: all_reduce: out has 3 elements, but 4 are required (out.size() == in.size())");
  fails(
      [](auto& comm) {
        std::vector<int> in(4), out(2);
        gcl::reduce(comm, in, out, 2);
      },
      "rank 2: reduce: out on the root has 2 elements, but 4 are required");
  fails(
      [](auto& comm) {
        std::vector<int> in(comm.rank() == 0 ? 5 : 0), out(4);
        gcl::broadcast(comm, in, out, 0);
      },
      "rank 0: broadcast: in on the root has 5 elements, but 4 are required");
}
