#pragma once
/// \file
/// `gcl::automatic`: per call, the all_reduce algorithm that is fastest here for this world
/// size, element count and element size, measured on the first calls (the default), or
/// predicted by a `cost_model` alone (`.trials = 0`).
///
/// The model's prediction is a pure function of (model, P, count, sizeof(T), whether the
/// operator is commutative), so every rank holding the same model picks the same algorithm
/// without talking: pass a model that every rank agrees on (the default, a literal, or
/// `gcl::calibrate(comm)`, which returns the same model everywhere).
///
/// Measured tuning: per (world size, power-of-two size class, element size, commutativity) the
/// first calls race the model's shortlist of candidates. Every call is a real all_reduce of the
/// caller's data, timed from a common start (a tree barrier) and agreed by all ranks inside the
/// same call (the maximum over ranks, by a two-double tree all_reduce under the same call_info).
/// Candidates take turns of two calls, the first a warm-up; nothing is decided before each has
/// `trials` times and the race has lasted `min_race_seconds`; then any candidate whose fastest
/// time is slower than the leader's median drops out, and the rest go on until one is left or
/// each has `max_trials` times; the least median wins. Every rank holds the same agreed numbers,
/// so every rank picks the same algorithm, on the same call. Later calls of that class run the
/// winner with no extra message. The state lives in the communicator (`communicator::cached`),
/// so a temporary `gcl::automatic{}` in each call learns too, and a new communicator starts
/// afresh.
///
/// With the environment variable `GCL_DEBUG=1`, each decision is written to stderr once: the
/// model's once per (world size, size class) per process, "gcl: automatic: P=4
/// bytes=[4096,8192) -> ring (predicted us: ...)", a tuned one once per race by rank 0, with
/// every candidate's times.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
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
#include "../detail/automatic_race.hpp"
#include "../op.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "parameter_server.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

/// Picks the all_reduce algorithm for each call (see the file comment): by timing the model's
/// shortlist on the first calls of each size class (the default), or by the model alone.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{});            // tuned
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = gcl::calibrate(comm)});
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.trials = 0});  // the model alone
struct automatic {
  static constexpr std::string_view name = "automatic";
  /// Algorithms that reorder operands are only considered for commutative operators.
  static constexpr bool needs_commutative = false;

  /// The model the predictions come from; must be the same on every rank.
  cost_model model{};

  /// Measured tuning: every shortlisted candidate is timed at least `trials` times per (P,
  /// power-of-two size class, sizeof(T), commutativity) before a choice is made. 0 runs the
  /// model's choice, a pure function of the model and the shape (reproducible run to run).
  int trials = 3;

  /// Close races go on until each candidate still racing has this many times.
  int max_trials = 3 * trials;

  /// Nothing is decided before the race has lasted this long (wall time, agreed): where ranks
  /// share cores, how the OS places the threads makes an algorithm faster or slower for
  /// milliseconds at a time, and the times must span several such swings. Small messages then
  /// get many more than `max_trials` times each.
  double min_race_seconds = 0.05;

  /// With tuning, the candidates are the algorithms the model predicts within this factor of
  /// its best (ring only for commutative operators); infinity tries every one.
  double shortlist = 4.0;

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

  /// What `comm`'s next all_reduce of `count` elements of `element_size` bytes runs once
  /// settled: the tuned winner, or the model's choice where nothing is tuned (trials 0, P 1, no
  /// data); empty while trials run. The same on every rank after the same calls.
  ///
  ///     if (auto c = gcl::automatic{}.tuned_choice(comm, v.size(), 4, true)) ...
  template <class Comm>
  std::optional<choice> tuned_choice(Comm& comm, std::size_t count, std::size_t element_size,
                                     bool commutative) const {
    int const p = comm.size();
    if (!tunes(p, count * element_size)) return choose(p, count, element_size, commutative);
    auto const& entries = comm.template cached<detail::automatic_tuning>().entries;
    auto it = entries.find(key_of(p, count * element_size, element_size, commutative));
    if (it == entries.end() || it->second.chosen < 0) return std::nullopt;
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
    auto& e = comm.template cached<detail::automatic_tuning>().find(
        key_of(p, bytes, sizeof(T), commutative));
    if (e.chosen >= 0) return run(static_cast<choice>(e.chosen), comm, data, op);
    if (e.candidates.empty()) {  // every rank builds the same list: it is the model's
      for (choice x : candidates(p, data.size(), sizeof(T), commutative))
        e.candidates.push_back(static_cast<int>(x));
      e.seconds.resize(e.candidates.size());
      e.racing.assign(e.candidates.size(), true);
      e.start = std::chrono::steady_clock::now();
    }
    // A trial: the real call, timed from a common start (else the previous call's exit skew,
    // which depends on its algorithm, would be charged to this one), then the slowest rank's
    // time and the race's duration so far agreed. Barrier and agreement run inside the same
    // call (same call_info on every rank, so the transport's checks hold); the tree keeps rank
    // order. A turn's warm-up is not timed, so nothing is agreed after it: its candidate's
    // counted call then follows it as a call follows the previous one in a benchmark loop.
    tree{}.barrier(comm);
    auto const t0 = std::chrono::steady_clock::now();
    run(static_cast<choice>(e.candidates[e.turn]), comm, data, op);
    if (e.warming) return detail::automatic_race(e, 0, 0, trials, max_trials, min_race_seconds);
    auto const t1 = std::chrono::steady_clock::now();
    std::array<double, 2> agreed{std::chrono::duration<double>(t1 - t0).count(),
                                 std::chrono::duration<double>(t1 - e.start).count()};
    tree{}.all_reduce(comm, std::span<double>(agreed), max{});
    detail::automatic_race(e, agreed[0], agreed[1], trials, max_trials, min_race_seconds);
    if (e.chosen >= 0 && comm.rank() == 0) log_tuned(p, bytes, sizeof(T), commutative, e);
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
  bool tunes(int p, std::size_t bytes) const { return trials > 0 && p > 1 && bytes > 0; }

  static int size_class(std::size_t bytes) {
    return bytes == 0 ? -1 : static_cast<int>(std::bit_width(bytes)) - 1;
  }
  detail::automatic_tuning::key key_of(int p, std::size_t bytes, std::size_t element_size,
                                       bool commutative) const {
    return {
        trials,      max_trials,    min_race_seconds,  shortlist, model.alpha,       model.beta,
        model.gamma, model.latency, model.parallelism, p,         size_class(bytes), element_size,
        commutative};
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

  // Rank 0 only, once per entry: every candidate's agreed trial times (us) and the winner.
  void log_tuned(int p, std::size_t bytes, std::size_t element_size, bool commutative,
                 detail::automatic_tuning::entry const& e) const {
    if (!debug_enabled()) return;
    int const sc = size_class(bytes);
    std::fprintf(stderr,
                 "gcl: automatic: P=%d bytes=[%zu,%zu) element=%zu%s tuned -> %s (model's pick "
                 "%s; median [trials] in us, x = dropped:",
                 p, std::size_t{1} << sc, std::size_t{2} << sc, element_size,
                 commutative ? "" : " non-commutative",
                 choice_names[static_cast<std::size_t>(e.chosen)].data(),
                 choice_names[static_cast<std::size_t>(e.candidates[0])].data());
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
      std::fprintf(stderr, " %s%s %.1f [", e.racing[i] ? "" : "x ",
                   choice_names[static_cast<std::size_t>(e.candidates[i])].data(),
                   detail::lower_median(e.seconds[i]) * 1e6);
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
