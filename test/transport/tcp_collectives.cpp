#define BOOST_TEST_MODULE transport_tcp_collectives
#include <boost/test/unit_test.hpp>

// Every collective with every algorithm that implements it, over TCP (threads on loopback)
// and over inproc, on the same inputs: the results must be bit-identical.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/all_to_all.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/gather.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/collective/scatter.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/tcp.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace {

using record = std::pair<std::string, std::vector<float>>;

float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * static_cast<int>(i % 101 + 1) + static_cast<int>(i % 7));
}
std::vector<float> data(int r, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(r, i);
  return v;
}

template <class Comm, class Alg>
void run_algorithm(Comm& comm, Alg const& alg, std::string const& name, std::vector<record>& out) {
  int const p = comm.size(), me = comm.rank();
  auto const up = static_cast<std::size_t>(p);
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, up - 1, up, up + 1, std::size_t{37}, std::size_t{1001}}) {
    auto tagged = [&](char const* what) { return name + " " + what + " n=" + std::to_string(n); };
    if constexpr (gcl::all_reduce_algorithm<Alg, Comm, float, gcl::sum>) {
      auto v = data(me, n);
      gcl::all_reduce(comm, v, gcl::sum{}, alg);
      out.emplace_back(tagged("all_reduce sum"), v);
      auto w = data(me, n);
      gcl::all_reduce(comm, w, gcl::max{}, alg);
      out.emplace_back(tagged("all_reduce max"), w);
    }
    if constexpr (gcl::reduce_algorithm<Alg, Comm, float, gcl::sum>) {
      auto v = data(me, n);
      gcl::reduce(comm, v, p - 1, gcl::sum{}, alg);
      if (me == p - 1) out.emplace_back(tagged("reduce"), v);
    }
    if constexpr (gcl::broadcast_algorithm<Alg, Comm, float>) {
      auto v = data(me, n);
      gcl::broadcast(comm, v, p / 2, alg);
      out.emplace_back(tagged("broadcast"), v);
    }
    if constexpr (gcl::reduce_scatter_algorithm<Alg, Comm, float, gcl::sum>) {
      auto v = data(me, n);
      std::vector<float> mine(gcl::reduce_scatter_size(n, me, p));
      gcl::reduce_scatter(comm, v, mine, gcl::sum{}, alg);
      out.emplace_back(tagged("reduce_scatter"), mine);
    }
    if constexpr (gcl::all_gather_algorithm<Alg, Comm, float>) {
      auto v = data(me, n);
      std::vector<float> all(n * up);
      gcl::all_gather(comm, v, all, alg);
      out.emplace_back(tagged("all_gather"), all);
    }
    if constexpr (gcl::gather_algorithm<Alg, Comm, float>) {
      auto v = data(me, n);
      std::vector<float> all(me == 0 ? n * up : 0);
      gcl::gather(comm, v, all, 0, alg);
      out.emplace_back(tagged("gather"), all);
    }
    if constexpr (gcl::scatter_algorithm<Alg, Comm, float>) {
      auto all = me == p - 1 ? data(me, n * up) : std::vector<float>{};
      std::vector<float> mine(n);
      gcl::scatter(comm, all, mine, p - 1, alg);
      out.emplace_back(tagged("scatter"), mine);
    }
    if constexpr (gcl::all_to_all_algorithm<Alg, Comm, float>) {
      auto v = data(me, n * up);
      std::vector<float> t(n * up);
      gcl::all_to_all(comm, v, t, alg);
      out.emplace_back(tagged("all_to_all"), t);
    }
  }
  if constexpr (gcl::barrier_algorithm<Alg, Comm>) {
    gcl::barrier(comm, alg);
    out.emplace_back(name + " barrier", std::vector<float>{});
  }
}

template <class Comm>
std::vector<record> run_all(Comm& comm) {
  std::vector<record> out;
  run_algorithm(comm, gcl::tree{}, "tree", out);
  run_algorithm(comm, gcl::ring{}, "ring", out);
  run_algorithm(comm, gcl::direct{}, "direct", out);
  run_algorithm(comm, gcl::parameter_server{}, "parameter_server", out);
  if (comm.size() > 1)
    run_algorithm(comm, gcl::parameter_server{.dedicated_server = true}, "ps-dedicated", out);
  run_algorithm(comm, gcl::recursive_doubling{}, "recursive_doubling", out);
  run_algorithm(comm, gcl::halving_doubling{}, "halving_doubling", out);
  run_algorithm(comm, gcl::automatic{}, "automatic", out);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_collective_and_algorithm_is_bit_identical_to_inproc) {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    auto want = gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) { return run_all(comm); });
    gcl::tcp_options o;
    o.timeout = std::chrono::seconds{30};
    auto got = gcl::spawn<gcl::tcp_transport>(
        p, [](auto& comm) { return run_all(comm); }, o);
    BOOST_TEST_MESSAGE("P=" << p << ": " << got[0].size() << " results per rank compared");
    BOOST_TEST(got[0].size() > 100u);
    for (int r = 0; r < p; ++r) {
      BOOST_TEST_REQUIRE(got[r].size() == want[r].size(), "P=" << p << " rank " << r);
      for (std::size_t k = 0; k < got[r].size(); ++k) {
        auto const& [name, g] = got[r][k];
        auto const& w = want[r][k].second;
        BOOST_TEST_INFO("P=" << p << " rank " << r << ": " << name);
        BOOST_TEST_REQUIRE(name == want[r][k].first);
        BOOST_TEST_REQUIRE(g.size() == w.size());
        BOOST_TEST((g.empty() || std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0));
      }
    }
  }
}
