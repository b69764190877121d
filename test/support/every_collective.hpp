#pragma once
// Every collective with every algorithm that implements it, on inputs that differ per rank and
// element, recorded as (name, result) per call: the transport tests run it over inproc and over
// their transport and compare the records bit for bit.

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/hierarchical.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/all_gatherv.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/all_to_all.hpp>
#include <gcl/collective/all_to_allv.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/exscan.hpp>
#include <gcl/collective/gather.hpp>
#include <gcl/collective/gatherv.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/collective/reduce_scatterv.hpp>
#include <gcl/collective/scan.hpp>
#include <gcl/collective/scatter.hpp>
#include <gcl/collective/scatterv.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace gcl_test {

using record = std::pair<std::string, std::vector<float>>;

inline float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * static_cast<int>(i % 101 + 1) + static_cast<int>(i % 7));
}
inline std::vector<float> data(int r, std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = value(r, i);
  return v;
}

template <class Comm, class Alg>
void run_algorithm(Comm& comm, Alg const& alg, std::string const& name, std::vector<record>& out,
                   std::size_t large = 0) {
  int const p = comm.size(), me = comm.rank();
  auto const up = static_cast<std::size_t>(p);
  std::vector<std::size_t> sizes{0, 1, up - 1, up, up + 1, 37, 1001};
  if (large != 0) sizes.push_back(large);
  for (std::size_t n : sizes) {
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
    // Per-rank counts n, n / 2, n, n / 2, ... (0 on some ranks when n < 2).
    std::vector<std::size_t> counts(up);
    for (std::size_t r = 0; r < up; ++r) counts[r] = r % 2 == 0 ? n : n / 2;
    std::size_t const total = gcl::detail::sum_of(counts),
                      mine = counts[static_cast<std::size_t>(me)];
    if constexpr (gcl::gatherv_algorithm<Alg, Comm, float>) {
      std::vector<float> all(me == 0 ? total : 0);
      gcl::gatherv(comm, data(me, mine), all, counts, 0, alg);
      out.emplace_back(tagged("gatherv"), all);
    }
    if constexpr (gcl::scatterv_algorithm<Alg, Comm, float>) {
      auto all = me == p - 1 ? data(me, total) : std::vector<float>{};
      std::vector<float> got(mine);
      gcl::scatterv(comm, all, got, counts, p - 1, alg);
      out.emplace_back(tagged("scatterv"), got);
    }
    if constexpr (gcl::all_gatherv_algorithm<Alg, Comm, float>) {
      std::vector<float> all(total);
      gcl::all_gatherv(comm, data(me, mine), all, counts, alg);
      out.emplace_back(tagged("all_gatherv"), all);
    }
    if constexpr (gcl::all_to_allv_algorithm<Alg, Comm, float>) {
      // Rank s sends counts[(s + d) mod P] elements to rank d.
      std::vector<std::size_t> send(up), recv(up);
      for (std::size_t d = 0; d < up; ++d) {
        send[d] = counts[(static_cast<std::size_t>(me) + d) % up];
        recv[d] = counts[(d + static_cast<std::size_t>(me)) % up];
      }
      std::vector<float> got(gcl::detail::sum_of(recv));
      gcl::all_to_allv(comm, data(me, gcl::detail::sum_of(send)), send, got, recv, alg);
      out.emplace_back(tagged("all_to_allv"), got);
    }
    if constexpr (gcl::reduce_scatterv_algorithm<Alg, Comm, float, gcl::sum>) {
      std::vector<float> got(mine);
      gcl::reduce_scatterv(comm, data(me, total), got, counts, gcl::sum{}, alg);
      out.emplace_back(tagged("reduce_scatterv"), got);
    }
    if constexpr (gcl::scan_algorithm<Alg, Comm, float, gcl::sum>) {
      auto v = data(me, n);
      gcl::scan(comm, v, gcl::sum{}, alg);
      out.emplace_back(tagged("scan"), v);
    }
    if constexpr (gcl::exscan_algorithm<Alg, Comm, float, gcl::sum>) {
      auto v = data(me, n);
      gcl::exscan(comm, v, gcl::sum{}, alg);
      out.emplace_back(tagged("exscan"), v);
    }
  }
  if constexpr (gcl::barrier_algorithm<Alg, Comm>) {
    gcl::barrier(comm, alg);
    out.emplace_back(name + " barrier", std::vector<float>{});
  }
}

/// `large`: one more size, for transports whose large messages take another path. `only`: the
/// names of the algorithms to run (every one when empty), for passes that need not repeat them
/// all.
template <class Comm>
std::vector<record> run_all(Comm& comm, std::size_t large = 0,
                            std::vector<std::string> const& only = {}) {
  std::vector<record> out;
  auto run = [&](auto const& alg, std::string const& name) {
    if (only.empty() || std::find(only.begin(), only.end(), name) != only.end())
      run_algorithm(comm, alg, name, out, large);
  };
  run(gcl::tree{}, "tree");
  run(gcl::ring{}, "ring");
  run(gcl::direct{}, "direct");
  run(gcl::parameter_server{}, "parameter_server");
  if (comm.size() > 1) run(gcl::parameter_server{.dedicated_server = true}, "ps-dedicated");
  run(gcl::recursive_doubling{}, "recursive_doubling");
  run(gcl::halving_doubling{}, "halving_doubling");
  run(gcl::hierarchical{}, "hierarchical");  // ring where the transport names no hosts
  run(gcl::automatic{}, "automatic");
  return out;
}

}  // namespace gcl_test
