#pragma once
/// \file
/// `gcl::automatic`: per call, the all_reduce algorithm that is fastest here for this world
/// size, element count and element size, measured on the first calls (the default), or
/// predicted by a `cost_model` alone (`.trials = 0`). `gcl::automatic_of<A, B, ...>` is the
/// same policy over another list of candidates; `gcl::automatic` is the list of gcl's six, and
/// `gcl::automatic::with<mine>` adds one:
///
///     using with_mine = gcl::automatic::with<my_all_reduce>;   // races my_all_reduce too
///     gcl::all_reduce(comm, v, gcl::sum{}, with_mine{});
///
/// A candidate is a `gcl::algorithm` with a default constructor, an all_reduce, and a schedule
/// (cost_model.hpp) from which the model predicts it. Candidates that need a commutative
/// operator are left out for one that is not. `ring` runs as the default all_reduce (by_size)
/// runs it, a cache-sized block at a time (`by_size::ring_of`, from the transport's thresholds), so
/// that the race times the ring users get; the model predicts the whole-buffer ring (it has no
/// cache term, and the blocks only add a latency per block).
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
/// `trials` times and the race has lasted `min_race_seconds`; then any candidate clearly behind
/// the leader (its lower quartile above the leader's upper quartile) drops out, and the rest go
/// on until one is left or each has `max_trials` times; the least median wins. Every rank holds
/// the same agreed numbers, so every rank picks the same algorithm, on the same call (the race
/// itself is detail/automatic_race.hpp). Later calls of that class run the winner with no extra
/// message. The state lives in the communicator (`communicator::cached`, one state per
/// candidate list), so a temporary `gcl::automatic{}` in each call learns too, and a new
/// communicator starts afresh.
///
/// With the environment variable `GCL_DEBUG=1`, each decision is logged once (log.hpp, level
/// debug; stderr unless a handler is set): the model's once per (world size, size class) per
/// process, "gcl: automatic: P=4 bytes=[4096,8192) -> ring (predicted us: ...)", a tuned one
/// once per race by rank 0, with every candidate's times.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../concepts.hpp"
#include "../cost_model.hpp"
#include "../detail/automatic_race.hpp"
#include "../log.hpp"
#include "../op.hpp"
#include "by_size.hpp"
#include "direct.hpp"
#include "halving_doubling.hpp"
#include "parameter_server.hpp"
#include "recursive_doubling.hpp"
#include "ring.hpp"
#include "tree.hpp"

namespace gcl {

namespace detail {

/// What `automatic_of` needs of a candidate: a `gcl::algorithm` it can make (`Alg{}`) and whose
/// all_reduce the model can predict (a `schedule`, see cost_model.hpp).
template <class Alg>
concept automatic_candidate =
    algorithm<Alg> && std::default_initializable<Alg> && scheduled_algorithm<Alg>;

// `automatic_of<...>::choice`: a candidate's position in the list. gcl::automatic's six keep
// their names (`automatic::choice::ring`) in any list that starts with them, as
// `automatic::with<mine>` does; other positions, and other lists, are unnamed values.
template <class... Algorithms>
struct automatic_choice {
  enum class type : int {};
};
template <class... More>
struct automatic_choice<tree, ring, recursive_doubling, halving_doubling, direct, parameter_server,
                        More...> {
  enum class type : int {
    tree,
    ring,
    recursive_doubling,
    halving_doubling,
    direct,
    parameter_server
  };
};

// The tuning state of one candidate list on a communicator. A type per list because
// `communicator::cached` keeps one state per type: automatics racing different lists on one
// communicator must not read each other's candidate indices.
template <class Automatic>
struct automatic_tuning_of : automatic_tuning {};

}  // namespace detail

/// Picks, on each call, one of `Algorithms...` for the all_reduce (see the file comment): by
/// timing the model's shortlist on the first calls of each size class (the default), or by the
/// model alone. The order of the list breaks ties. Most code wants `gcl::automatic` (gcl's six)
/// or `gcl::automatic::with<mine>`.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic_of<gcl::tree, gcl::ring, mine>{});
template <class... Algorithms>
struct automatic_of {
  static_assert(sizeof...(Algorithms) > 0, "gcl::automatic_of: name at least one candidate");
  static_assert((detail::automatic_candidate<Algorithms> && ...),
                "gcl::automatic_of: every candidate must be a gcl::algorithm (name, "
                "needs_commutative) with a default constructor, an all_reduce, and a member "
                "schedule(P, count, element_size, f) from which the cost model predicts it");

  static constexpr std::string_view name = "automatic";
  /// Candidates that reorder operands are only considered for commutative operators, so only a
  /// list of nothing but such candidates needs one.
  static constexpr bool needs_commutative = (Algorithms::needs_commutative && ...);

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
  /// its best (those that need a commutative operator only for one); infinity tries every one.
  double shortlist = 4.0;

  /// A candidate: its position in `Algorithms...`, the order that breaks ties (the first of
  /// equal predictions wins, equal meaning within a relative 1e-9). gcl::automatic's are named:
  /// `choice::tree, ring, recursive_doubling, halving_doubling, direct, parameter_server`.
  using choice = typename detail::automatic_choice<Algorithms...>::type;
  /// The candidates' names (`Alg::name`), indexed by `choice`.
  static constexpr std::array<std::string_view, sizeof...(Algorithms)> choice_names = {
      Algorithms::name...};
  /// The `choice` of `Alg`, which must be in the list once.
  ///
  ///     static_assert(gcl::automatic::choice_of<gcl::ring> == gcl::automatic::choice::ring);
  template <class Alg>
  static constexpr choice choice_of = [] {
    constexpr std::array<bool, sizeof...(Algorithms)> same = {std::same_as<Alg, Algorithms>...};
    static_assert(std::count(same.begin(), same.end(), true) == 1,
                  "gcl::automatic_of::choice_of: the algorithm is not in the list exactly once");
    return static_cast<choice>(std::find(same.begin(), same.end(), true) - same.begin());
  }();
  /// This list with `More...` added at the end: adding an algorithm to the race is one line.
  ///
  ///     using with_mine = gcl::automatic::with<my_all_reduce>;
  template <class... More>
  using with = automatic_of<Algorithms..., More...>;

  /// The algorithm `all_reduce` would run for `count` elements of `element_size` bytes on `p`
  /// ranks; `commutative` says whether reordering algorithms (ring) may be used.
  ///
  ///     auto c = gcl::automatic{}.choose(4, 1 << 20, 4, true);   // likely choice::ring
  choice choose(int p, std::size_t count, std::size_t element_size, bool commutative) const {
    auto const times = predictions(p, count, element_size);
    std::size_t best = size;
    for (std::size_t i = 0; i < size; ++i) {
      if (!usable(i, commutative)) continue;
      // Within a relative 1e-9 is a tie (rounding of equal closed forms): the earlier wins.
      if (best == size || times[i] < times[best] * (1 - 1e-9)) best = i;
    }
    // No usable candidate only for a non-commutative operator and a list that needs a
    // commutative one, which all_reduce rejects at compile time.
    return static_cast<choice>(best == size ? 0 : best);
  }

  /// The predicted seconds of every candidate, indexed by `choice`.
  std::array<double, sizeof...(Algorithms)> predictions(int p, std::size_t count,
                                                        std::size_t element_size) const {
    std::size_t const bytes = count * element_size;
    return {model.predict(Algorithms{}, p, bytes, element_size)...};
  }

  /// With tuning, the algorithms tried: those predicted within `shortlist` of the model's best,
  /// best predicted first (ties in `choice` order); never one that needs a commutative operator
  /// (ring) for a non-commutative one.
  std::vector<choice> candidates(int p, std::size_t count, std::size_t element_size,
                                 bool commutative) const {
    auto const t = predictions(p, count, element_size);
    choice const first = choose(p, count, element_size, commutative);
    double const best = t[index(first)];
    std::vector<choice> c{first};
    for (std::size_t i = 0; i < size; ++i)
      if (usable(i, commutative) && i != index(first) && t[i] <= best * shortlist)
        c.push_back(static_cast<choice>(i));
    std::stable_sort(c.begin() + 1, c.end(),
                     [&](choice a, choice b) { return t[index(a)] < t[index(b)]; });
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
    auto const& entries = comm.template cached<tuning>().entries;
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
      return run(index(c), comm, data, op);
    }
    auto& e = comm.template cached<tuning>().find(key_of(p, bytes, sizeof(T), commutative));
    if (e.chosen >= 0) return run(static_cast<std::size_t>(e.chosen), comm, data, op);
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
    run(static_cast<std::size_t>(e.candidates[e.turn]), comm, data, op);
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
    visit(index(choose(p, count, element_size, true)), [&]<class Alg>(std::type_identity<Alg>) {
      for_each_step(Alg{}, p, count, element_size, step);
    });
  }

 private:
  static constexpr std::size_t size = sizeof...(Algorithms);
  static constexpr std::array<bool, size> needs_commutative_of = {Algorithms::needs_commutative...};
  using tuning = detail::automatic_tuning_of<automatic_of>;

  static constexpr std::size_t index(choice c) noexcept { return static_cast<std::size_t>(c); }
  static constexpr bool usable(std::size_t i, bool commutative) noexcept {
    return commutative || !needs_commutative_of[i];
  }

  // Calls `f(std::type_identity<A>{})` for the candidate `A` at position `i`: the type list's
  // counterpart of a switch over the candidates.
  template <class F>
  static void visit(std::size_t i, F&& f) {
    std::size_t at = 0;
    (void)((at++ == i && (f(std::type_identity<Algorithms>{}), true)) || ...);
  }

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
  static void run(std::size_t c, Comm& comm, std::span<T> data, Op const& op) {
    visit(c, [&]<class Alg>(std::type_identity<Alg>) {
      // A candidate that needs a commutative operator is never chosen nor tried for another.
      if constexpr (enable_commutative<Op> || !Alg::needs_commutative)
        as_run_on<Alg>(comm).all_reduce(comm, data, op);
    });
  }

  // A candidate as it runs on `comm`: ring a cache-sized block at a time, as the default
  // (by_size) runs it, else the textbook ring would race, and lose, where the default wins
  // (1.2-1.9x at 64 MiB on threads); every other candidate as `Alg{}`.
  template <class Alg, class Comm>
  static Alg as_run_on(Comm& comm) {
    if constexpr (std::same_as<Alg, ring>)
      return by_size::ring_of(detail::thresholds_of_comm(comm), comm.size(),
                              detail::hint_of(comm, detail::ranks_share_cores));
    else
      return Alg{};
  }

  // Rank 0 only, once per entry: every candidate's agreed trial times (us) and the winner.
  void log_tuned(int p, std::size_t bytes, std::size_t element_size, bool commutative,
                 detail::automatic_tuning::entry const& e) const {
    if (!detail::debug_log_enabled()) return;
    int const sc = size_class(bytes);
    std::string text = detail::log_text(
        "gcl: automatic: P=%d bytes=[%zu,%zu) element=%zu%s tuned -> %s (model's pick %s; median "
        "[trials] in us, x = dropped:",
        p, std::size_t{1} << sc, std::size_t{2} << sc, element_size,
        commutative ? "" : " non-commutative",
        choice_names[static_cast<std::size_t>(e.chosen)].data(),
        choice_names[static_cast<std::size_t>(e.candidates[0])].data());
    for (std::size_t i = 0; i < e.candidates.size(); ++i) {
      text += detail::log_text(" %s%s %.1f [", e.racing[i] ? "" : "x ",
                               choice_names[static_cast<std::size_t>(e.candidates[i])].data(),
                               detail::lower_median(e.seconds[i]) * 1e6);
      for (std::size_t j = 0; j < e.seconds[i].size(); ++j)
        text += detail::log_text("%s%.1f", j ? " " : "", e.seconds[i][j] * 1e6);
      text += ']';
    }
    text += ')';
    detail::log(log_level::debug, text);
  }

  // Once per (P, size class) per process and candidate list: ranks on threads share the set, so
  // a decision is logged once, not P times. The environment is read once (log.hpp).
  void log_once(int p, std::size_t count, std::size_t element_size, choice c) const {
    if (!detail::debug_log_enabled()) return;
    std::size_t const bytes = count * element_size;
    int const size_class = automatic_of::size_class(bytes);
    static std::mutex mutex;
    static std::set<std::pair<int, int>> logged;
    std::lock_guard lock(mutex);
    if (!logged.emplace(p, size_class).second) return;
    auto const t = predictions(p, count, element_size);
    std::string text =
        detail::log_text("gcl: automatic: P=%d bytes=[%zu,%zu) -> %s (predicted us:", p,
                         bytes == 0 ? 0 : std::size_t{1} << size_class,
                         bytes == 0 ? 1 : std::size_t{2} << size_class,
                         choice_names[static_cast<std::size_t>(c)].data());
    for (std::size_t i = 0; i < t.size(); ++i)
      text += detail::log_text(" %s %.1f", choice_names[i].data(), t[i] * 1e6);
    text += ')';
    detail::log(log_level::debug, text);
  }
};

/// gcl's all_reduce algorithms as `automatic_of`'s candidates, in the order that breaks ties:
/// the default `automatic`. Adding an algorithm here (or to a list of one's own:
/// `automatic::with<mine>`) is all it takes for automatic to predict and race it.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{});            // tuned
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.model = gcl::calibrate(comm)});
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::automatic{.trials = 0});  // the model alone
using automatic =
    automatic_of<tree, ring, recursive_doubling, halving_doubling, direct, parameter_server>;

}  // namespace gcl
