#pragma once
/// \file
/// `gcl::automatic`: per call, the all_reduce algorithm with the least predicted time for this
/// world size, element count and element size under a `cost_model`. The choice is a pure
/// function of (model, P, count, sizeof(T), whether the operator is commutative), so every
/// rank holding the same model picks the same algorithm without talking: pass a model that
/// every rank agrees on (the default, a literal, or `gcl::calibrate(comm)`, which returns the
/// same model everywhere).
///
/// With the environment variable `GCL_DEBUG=1`, each decision is written to stderr once per
/// (world size, size class) per process, a size class being the power of two at or below the
/// byte count: "gcl: automatic: P=4 bytes=[4096,8192) -> ring (predicted 12.3 us; ...)".

#include <array>
#include <bit>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "../concepts.hpp"
#include "../cost_model.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "parameter_server.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

/// Picks the all_reduce algorithm with the least predicted time (see the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{});
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = gcl::calibrate(comm)});
struct automatic {
  static constexpr std::string_view name = "automatic";
  /// Algorithms that reorder operands are only considered for commutative operators.
  static constexpr bool needs_commutative = false;

  /// The model the predictions come from; must be the same on every rank.
  cost_model model{};

  /// The candidates, in the order that breaks ties (the first of equal predictions wins, equal
  /// meaning within a relative 1e-9).
  enum class choice { tree, ring, recursive_doubling, halving_doubling, direct, parameter_server };
  static constexpr std::array<std::string_view, 6> choice_names = {
      "tree", "ring", "recursive_doubling", "halving_doubling", "direct", "parameter_server"};

  /// The algorithm `all_reduce` would run for `count` elements of `element_size` bytes on `p`
  /// ranks; `commutative` says whether reordering algorithms (ring) may be used.
  ///
  ///     auto c = gcl::automatic{}.choose(4, 1 << 20, 4, true);   // likely choice::ring
  choice choose(int p, std::size_t count, std::size_t element_size, bool commutative) const {
    auto const times = predictions(p, count, element_size);
    choice best = choice::tree;
    for (std::size_t i = 1; i < times.size(); ++i) {
      auto c = static_cast<choice>(i);
      if (!commutative && c == choice::ring) continue;
      // Within a relative 1e-9 is a tie (rounding of equal closed forms): the earlier wins.
      if (times[i] < times[static_cast<std::size_t>(best)] * (1 - 1e-9)) best = c;
    }
    return best;
  }

  /// The predicted seconds of every candidate, indexed by `choice`.
  std::array<double, 6> predictions(int p, std::size_t count, std::size_t element_size) const {
    std::size_t const bytes = count * element_size;
    return {model.predict(tree{}, p, bytes, element_size),
            model.predict(ring{}, p, bytes, element_size),
            model.predict(recursive_doubling{}, p, bytes, element_size),
            model.predict(halving_doubling{}, p, bytes, element_size),
            model.predict(direct{}, p, bytes, element_size),
            model.predict(parameter_server{}, p, bytes, element_size)};
  }

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    constexpr bool commutative = enable_commutative<Op>;
    choice const c = choose(comm.size(), data.size(), sizeof(T), commutative);
    log_once(comm.size(), data.size(), sizeof(T), c);
    switch (c) {
      case choice::tree:
        return tree{}.all_reduce(comm, data, op);
      case choice::ring:
        if constexpr (commutative)
          return ring{}.all_reduce(comm, data, op);
        else
          break;  // never chosen for a non-commutative operator
      case choice::recursive_doubling:
        return recursive_doubling{}.all_reduce(comm, data, op);
      case choice::halving_doubling:
        return halving_doubling{}.all_reduce(comm, data, op);
      case choice::direct:
        return direct{}.all_reduce(comm, data, op);
      case choice::parameter_server:
        return parameter_server{}.all_reduce(comm, data, op);
    }
  }

  /// The predicted time of the algorithm `automatic` would choose: the minimum over candidates.
  template <class F>
  void schedule(int p, std::size_t count, std::size_t element_size, F&& step) const {
    switch (choose(p, count, element_size, true)) {
      case choice::tree:
        return for_each_step(tree{}, p, count, element_size, step);
      case choice::ring:
        return for_each_step(ring{}, p, count, element_size, step);
      case choice::recursive_doubling:
        return for_each_step(recursive_doubling{}, p, count, element_size, step);
      case choice::halving_doubling:
        return for_each_step(halving_doubling{}, p, count, element_size, step);
      case choice::direct:
        return for_each_step(direct{}, p, count, element_size, step);
      case choice::parameter_server:
        return for_each_step(parameter_server{}, p, count, element_size, step);
    }
  }

 private:
  // Once per (P, size class) per process: ranks on threads share the set, so a decision is
  // logged once, not P times. The environment is read once.
  void log_once(int p, std::size_t count, std::size_t element_size, choice c) const {
    static bool const enabled = [] {
      char const* v = std::getenv("GCL_DEBUG");
      return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
    }();
    if (!enabled) return;
    std::size_t const bytes = count * element_size;
    int const size_class = bytes == 0 ? -1 : std::bit_width(bytes) - 1;
    static std::mutex mutex;
    static std::set<std::pair<int, int>> logged;
    std::lock_guard lock(mutex);
    if (!logged.emplace(p, size_class).second) return;
    auto const t = predictions(p, count, element_size);
    std::fprintf(stderr, "gcl: automatic: P=%d bytes=[%zu,%zu) -> %s (predicted us:", p,
                 bytes == 0 ? 0 : std::size_t{1} << size_class,
                 bytes == 0 ? 1 : std::size_t{2} << size_class,
                 choice_names[static_cast<std::size_t>(c)].data());
    for (std::size_t i = 0; i < t.size(); ++i)
      std::fprintf(stderr, " %s %.1f", choice_names[i].data(), t[i] * 1e6);
    std::fprintf(stderr, ")\n");
  }
};

}  // namespace gcl
