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
///
/// Measured tuning (`.trials = k`, off by default): per (world size, size class, element size,
/// operator commutativity) the first calls run the model's shortlist of candidates in turn, k
/// times each, every one a real all_reduce of the caller's data, timed; each trial's time is
/// measured from a common start (a tree barrier) and agreed by all ranks inside the same call
/// (the maximum over ranks, by a one-double tree all_reduce under the same call_info), so every
/// rank holds the same numbers and picks the same algorithm: the least median. Later calls of that
/// class run the winner with no extra message. The state lives in the `automatic` object (shared by
/// its copies, one entry per rank so that ranks on threads may share one object): keep the object
/// across calls.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../concepts.hpp"
#include "../cost_model.hpp"
#include "../op.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "parameter_server.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

namespace detail {

// Per-rank tuning progress. Keyed by rank because ranks on threads may share one `automatic`;
// each rank only touches its own entries. Sharded by rank so that ranks on threads do not
// queue on one mutex every call (a preempted holder would stall the others).
struct automatic_tuning {
  struct entry {
    std::vector<int> candidates;               // choice indices, the model's order
    std::vector<std::vector<double>> seconds;  // per candidate, agreed (max over ranks)
    int calls = 0;                             // trial calls completed
    int chosen = -1;                           // choice index once tuned
  };
  // rank, P, size class, element size, commutative
  using key = std::tuple<int, int, int, std::size_t, bool>;
  struct shard {
    std::mutex mutex;
    std::map<key, entry> entries;
  };
  std::array<shard, 16> shards;
  shard& of(key const& k) {
    return shards[static_cast<std::size_t>(std::get<0>(k)) % shards.size()];
  }
};

}  // namespace detail

/// Picks the all_reduce algorithm with the least predicted time (see the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{});
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = gcl::calibrate(comm)});
///
///     gcl::automatic const tuned{.trials = 3};   // measured: keep the object, reuse it
///     for (auto& batch : batches) gcl::all_reduce(comm, batch, gcl::sum{}, tuned);
struct automatic {
  static constexpr std::string_view name = "automatic";
  /// Algorithms that reorder operands are only considered for commutative operators.
  static constexpr bool needs_commutative = false;

  /// The model the predictions come from; must be the same on every rank.
  cost_model model{};

  /// Measured tuning: 0 (the default) runs the model's choice. k > 0: per (P, power-of-two
  /// size class, sizeof(T), commutativity) the first `k * candidates` calls try each candidate
  /// in turn, k times, and later calls run the one with the least median agreed time.
  int trials = 0;

  /// With tuning, the candidates are the algorithms the model predicts within this factor of
  /// its best (ring only for commutative operators); infinity tries every one.
  double shortlist = 4.0;

  /// The tuning state, shared by copies of this object (so a copy passed by value still
  /// learns). A fresh state per call (a temporary `automatic{.trials = 3}` in the call) never
  /// gets past the first trial: results stay correct, but each call pays the agreement.
  /// Made only when `trials > 0` at construction (setting `trials` later does not tune).
  std::shared_ptr<detail::automatic_tuning> tuning =
      trials > 0 ? std::make_shared<detail::automatic_tuning>() : nullptr;

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

  /// With tuning, the algorithms tried: those predicted within `shortlist` of the model's best,
  /// best predicted first (ties in `choice` order); never ring for a non-commutative operator.
  std::vector<choice> candidates(int p, std::size_t count, std::size_t element_size,
                                 bool commutative) const {
    auto const t = predictions(p, count, element_size);
    choice const first = choose(p, count, element_size, commutative);
    double const best = t[static_cast<std::size_t>(first)];
    std::vector<choice> c{first};
    for (std::size_t i = 0; i < t.size(); ++i)
      if ((commutative || static_cast<choice>(i) != choice::ring) &&
          static_cast<choice>(i) != first && t[i] <= best * shortlist)
        c.push_back(static_cast<choice>(i));
    std::stable_sort(c.begin() + 1, c.end(), [&](choice a, choice b) {
      return t[static_cast<std::size_t>(a)] < t[static_cast<std::size_t>(b)];
    });
    return c;
  }

  /// What rank `rank`'s next call of this shape runs once settled: the tuned winner, or the
  /// model's choice where nothing is tuned (trials 0, P 1, no data); empty while trials run.
  ///
  ///     if (auto c = tuned.tuned_choice(comm.rank(), comm.size(), v.size(), 4, true)) ...
  std::optional<choice> tuned_choice(int rank, int p, std::size_t count, std::size_t element_size,
                                     bool commutative) const {
    if (!tunes(p, count * element_size)) return choose(p, count, element_size, commutative);
    auto const k = key_of(rank, p, count * element_size, element_size, commutative);
    auto& sh = tuning->of(k);
    std::lock_guard lock(sh.mutex);
    auto it = sh.entries.find(k);
    if (it == sh.entries.end() || it->second.chosen < 0) return std::nullopt;
    return static_cast<choice>(it->second.chosen);
  }

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    constexpr bool commutative = enable_commutative<Op>;
    int const p = comm.size();
    std::size_t const bytes = data.size() * sizeof(T);
    if (!tunes(p, bytes)) {
      choice const c = choose(p, data.size(), sizeof(T), commutative);
      log_once(p, data.size(), sizeof(T), c);
      return run(c, comm, data, op);
    }
    auto const k = key_of(comm.rank(), p, bytes, sizeof(T), commutative);
    int c = -1;
    bool settled = false;
    auto& sh = tuning->of(k);
    {
      std::lock_guard lock(sh.mutex);
      auto& e = sh.entries[k];
      if (e.candidates.empty()) {  // every rank builds the same list: it is the model's
        for (choice x : candidates(p, data.size(), sizeof(T), commutative))
          e.candidates.push_back(static_cast<int>(x));
        e.seconds.resize(e.candidates.size());
      }
      c = e.chosen >= 0 ? e.chosen
                        : e.candidates[static_cast<std::size_t>(e.calls) % e.candidates.size()];
      settled = e.chosen >= 0;
    }
    if (settled) return run(static_cast<choice>(c), comm, data, op);
    // A trial: the real call, timed from a common start (else the previous call's exit skew,
    // which depends on its algorithm, would be charged to this one), then the slowest rank's
    // time agreed. Barrier and agreement run inside the same call (same call_info on every
    // rank, so the transport's checks hold); the tree keeps rank order.
    tree{}.barrier(comm);
    auto const t0 = std::chrono::steady_clock::now();
    run(static_cast<choice>(c), comm, data, op);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tree{}.all_reduce(comm, std::span<double>(&dt, 1), max{});
    std::lock_guard lock(sh.mutex);
    auto& e = sh.entries[k];
    auto const n = e.candidates.size();
    e.seconds[static_cast<std::size_t>(e.calls) % n].push_back(dt);
    if (++e.calls < trials * static_cast<int>(n)) return;
    std::size_t best = 0;  // least median; ties to the model's order. Agreed inputs: same on all
    std::vector<double> med(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto v = e.seconds[i];
      std::sort(v.begin(), v.end());
      med[i] = v[(v.size() - 1) / 2];
      if (med[i] < med[best]) best = i;
    }
    e.chosen = e.candidates[best];
    if (comm.rank() == 0) log_tuned(p, bytes, sizeof(T), commutative, e, med);
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
  bool tunes(int p, std::size_t bytes) const { return trials > 0 && p > 1 && bytes > 0 && tuning; }

  static int size_class(std::size_t bytes) {
    return bytes == 0 ? -1 : static_cast<int>(std::bit_width(bytes)) - 1;
  }
  static detail::automatic_tuning::key key_of(int rank, int p, std::size_t bytes,
                                              std::size_t element_size, bool commutative) {
    return {rank, p, size_class(bytes), element_size, commutative};
  }

  template <class Comm, class T, class Op>
  static void run(choice c, Comm& comm, std::span<T> data, Op const& op) {
    switch (c) {
      case choice::tree:
        return tree{}.all_reduce(comm, data, op);
      case choice::ring:
        if constexpr (enable_commutative<Op>)
          return ring{}.all_reduce(comm, data, op);
        else
          break;  // never chosen nor tried for a non-commutative operator
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

  static bool debug_enabled() {
    static bool const enabled = [] {
      char const* v = std::getenv("GCL_DEBUG");
      return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
    }();
    return enabled;
  }

  // Rank 0 only, once per entry: the agreed trial times (us) and the winner.
  void log_tuned(int p, std::size_t bytes, std::size_t element_size, bool commutative,
                 detail::automatic_tuning::entry const& e, std::vector<double> const& med) const {
    if (!debug_enabled()) return;
    int const sc = size_class(bytes);
    std::fprintf(stderr,
                 "gcl: automatic: P=%d bytes=[%zu,%zu) element=%zu%s tuned -> %s (model's pick %s; "
                 "median of %d trials, us:",
                 p, std::size_t{1} << sc, std::size_t{2} << sc, element_size,
                 commutative ? "" : " non-commutative",
                 choice_names[static_cast<std::size_t>(e.chosen)].data(),
                 choice_names[static_cast<std::size_t>(e.candidates[0])].data(), trials);
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
      std::fprintf(stderr, " %s %.1f [",
                   choice_names[static_cast<std::size_t>(e.candidates[i])].data(), med[i] * 1e6);
      for (std::size_t j = 0; j < e.seconds[i].size(); ++j)
        std::fprintf(stderr, "%s%.1f", j ? " " : "", e.seconds[i][j] * 1e6);
      std::fprintf(stderr, "]");
    }
    std::fprintf(stderr, ")\n");
  }

  // Once per (P, size class) per process: ranks on threads share the set, so a decision is
  // logged once, not P times. The environment is read once.
  void log_once(int p, std::size_t count, std::size_t element_size, choice c) const {
    if (!debug_enabled()) return;
    std::size_t const bytes = count * element_size;
    int const size_class = automatic::size_class(bytes);
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
