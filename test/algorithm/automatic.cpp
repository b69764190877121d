#define BOOST_TEST_MODULE algorithm_automatic
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/automatic.hpp>
#include <gcl/algorithm/by_size.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "../support/capture_stderr.hpp"
#include "accounting.hpp"

using namespace accounting;
using choice = gcl::automatic::choice;
using gcl_test::capture_stderr;

// First in the file: GCL_DEBUG is read once, at the first decision of the process.
BOOST_AUTO_TEST_CASE(gcl_debug_logs_each_decision_once_per_size_class) {
  ::setenv("GCL_DEBUG", "1", 1);
  gcl::automatic const a{.trials = 0};  // the model alone: its decisions are logged
  // 1000 and 1020 int64 (8000 and 8160 bytes) are one size class, [4096, 8192); 3 another.
  std::string const log = capture_stderr([&] {
    for (std::size_t n : {std::size_t{1000}, std::size_t{1020}, std::size_t{3}, std::size_t{1000}})
      run<std::int64_t>(4, n, gcl::sum{}, a, value);
  });
  std::size_t lines = 0;
  for (char c : log) lines += c == '\n';
  BOOST_TEST(lines == 2u, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[4096,8192) -> ") != std::string::npos, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[16,32) -> ") != std::string::npos, log);
}

std::size_t count_of(std::string const& text, std::string const& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr double every = std::numeric_limits<double>::infinity();

// The fewest and the most calls a tuning automatic with no time floor spends on one shape: every
// candidate at least `trials` turns, at most `max_trials`, of two calls each.
std::pair<int, int> trial_call_bounds(gcl::automatic const& a, int p, std::size_t n,
                                      std::size_t size, bool comm) {
  if (p == 1 || n == 0 || a.trials == 0) return {0, 0};
  int const c = static_cast<int>(a.candidates(p, n, size, comm).size());
  return {2 * a.trials * c, 2 * std::max(a.max_trials, a.trials) * c};
}

struct tuned_result {
  std::vector<int> wrong;                     // per rank: calls whose result was not exact
  std::vector<int> settled_after;             // per rank: calls made when a choice appeared
  std::vector<std::optional<choice>> chosen;  // per rank, after the last call
  std::vector<gcl::transport_stats> last;     // per rank: the last call alone
};

// `calls` sum all_reduces of `n` int64 with `a` on P ranks under counting, one communicator per
// rank throughout; call c adds c to every input, and each result is compared on the rank with
// the oracle computed there.
tuned_result run_tuned_sum(gcl::automatic const& a, int p, std::size_t n, int calls) {
  auto out = gcl::spawn<counted>(p, [&](auto& comm) {
    int wrong = 0, settled_after = -1;
    gcl::transport_stats last;
    for (int c = 0; c < calls; ++c) {
      auto make = [c](int r, std::size_t i) { return value(r, i) + c; };
      std::vector<std::int64_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = make(comm.rank(), i);
      if (c == calls - 1) comm.transport().reset();  // between calls: nothing in flight to us
      gcl::all_reduce(comm, v, gcl::sum{}, a);
      if (c == calls - 1) last = comm.transport().stats();
      wrong += v != expected_sum<std::int64_t>(comm.size(), n, make);
      if (settled_after < 0 && a.tuned_choice(comm, n, 8, true)) settled_after = c + 1;
    }
    return std::tuple(wrong, settled_after, a.tuned_choice(comm, n, 8, true), last);
  });
  tuned_result r;
  for (auto& [w, s, c, l] : out) {
    r.wrong.push_back(w);
    r.settled_after.push_back(s);
    r.chosen.push_back(c);
    r.last.push_back(l);
  }
  return r;
}

// The race alone, fed made-up times: the k-th counted call of candidate i takes times(i, k),
// every warm-up call 100 (slower than any, so a counted warm-up would show), and each call adds
// `call_seconds` to the race's duration. Returns the calls it took to settle (at most 1000).
template <class Times>
int race(gcl::detail::automatic_tuning::entry& e, int candidates, int trials, int max_trials,
         Times times, double min_seconds = 0, double call_seconds = 0) {
  e = {};
  for (int i = 0; i < candidates; ++i) e.candidates.push_back(i);
  e.seconds.resize(e.candidates.size());
  e.racing.assign(e.candidates.size(), true);
  int calls = 0;
  double elapsed = 0;
  for (; e.chosen < 0 && calls < 1000; ++calls) {
    auto const i = e.turn;
    double const t =
        e.warming ? 100.0 : times(static_cast<int>(i), static_cast<int>(e.seconds[i].size()));
    elapsed += call_seconds;
    gcl::detail::automatic_race(e, t, elapsed, trials, max_trials, min_seconds);
  }
  return calls;
}

BOOST_AUTO_TEST_CASE(the_race_drops_the_clearly_slower_and_settles_on_the_least_median) {
  gcl::detail::automatic_tuning::entry e;
  // A turn is two calls, a warm-up and a counted one. Steady times, all apart: after `trials`
  // rounds the leader is alone.
  BOOST_TEST(race(e, 4, 3, 9, [](int i, int) { return 1.0 + i; }) == 2 * 4 * 3);
  BOOST_TEST(e.chosen == 0);
  BOOST_TEST(race(e, 3, 3, 9, [](int i, int) { return i == 1 ? 1.0 : 2.0 + i; }) == 2 * 3 * 3);
  BOOST_TEST(e.chosen == 1);              // not the model's first
  BOOST_TEST(e.seconds[1].size() == 3u);  // the warm-ups are not kept
  // A close race (the second's fastest is never slower than the first's median) runs to
  // max_trials, then the least median wins: 1.0 (five of nine) against 1.2 (five of nine).
  BOOST_TEST(race(e, 2, 3, 9, [](int i, int k) {
               return i == 0 ? (k % 2 ? 1.2 : 1.0) : (k % 2 ? 1.0 : 1.2);
             }) == 2 * 2 * 9);
  BOOST_TEST(e.chosen == 0);
  BOOST_TEST((e.racing == std::vector<bool>{true, true}));
  // A dropped candidate takes no more turns: after 3 rounds 1 drops (its lower quartile, 5, is
  // above the leader's upper quartile, 1); 0 and 2 overlap, so they go on to max_trials, where
  // 2's median (0.8 of 1.1, 0.8, 1.1, 0.8, 1.1, 0.8) beats 0's (1).
  BOOST_TEST(race(e, 3, 3, 6, [](int i, int k) {
               return i == 0 ? 1.0 : i == 1 ? 5.0 : (k % 2 ? 0.8 : 1.1);
             }) == 2 * (3 * 3 + 2 * 3));
  BOOST_TEST(e.chosen == 2);
  BOOST_TEST(e.seconds[1].size() == 3u);
  BOOST_TEST(e.seconds[0].size() == 6u);
  // A leader's lucky start drops nothing that overlaps it: 0 starts fast (1, 1, then 3s), 1 is
  // steady at 2 after 2.5. After 3 rounds 0 leads (median 1) but its upper quartile is 3, so 1
  // (lower quartile 2) stays, and at max_trials it wins (median 2 against 3).
  BOOST_TEST(race(e, 2, 3, 6, [](int i, int k) {
               return i == 0 ? (k < 2 ? 1.0 : 3.0) : (k == 0 ? 2.5 : 2.0);
             }) == 2 * 2 * 6);
  BOOST_TEST(e.chosen == 1);
  // Equal times: nobody drops, and at max_trials the model's order breaks the tie.
  BOOST_TEST(race(e, 3, 2, 5, [](int, int) { return 1.0; }) == 2 * 3 * 5);
  BOOST_TEST(e.chosen == 0);
  // One candidate settles after `trials` turns; max_trials below trials means trials.
  BOOST_TEST(race(e, 1, 4, 0, [](int, int) { return 1.0; }) == 2 * 4);
  BOOST_TEST(race(e, 2, 3, 1, [](int i, int k) { return i == 0 ? 2.0 - k % 2 : 1.5; }) ==
             2 * 2 * 3);
  BOOST_TEST(e.chosen == 1);
  // Nothing is decided before the race has lasted min_race_seconds.
  auto apart = [](int i, int) { return 1.0 + i; };
  BOOST_TEST(race(e, 2, 1, 1, apart) == 2 * 2);
  BOOST_TEST(race(e, 2, 1, 1, apart, 2.0, 0.25) == 8);
  BOOST_TEST(e.chosen == 0);
  BOOST_TEST(race(e, 2, 1, 1, apart, 2.0, 0.125) == 16);
}

BOOST_AUTO_TEST_CASE(gcl_debug_logs_each_tuned_decision_once_with_its_trial_times) {
  ::setenv("GCL_DEBUG", "1", 1);
  gcl::automatic const a{.trials = 2, .min_race_seconds = 0, .shortlist = every};
  std::string const log = capture_stderr([&] {
    for (std::size_t n : {std::size_t{1000}, std::size_t{3}}) {
      int const calls = trial_call_bounds(a, 3, n, 8, true).second + 3;
      auto r = run_tuned_sum(a, 3, n, calls);
      for (int w : r.wrong) BOOST_TEST(w == 0);
    }
  });
  BOOST_TEST(count_of(log, " tuned -> ") == 2u, log);
  BOOST_TEST(count_of(log, "gcl: automatic: P=3 bytes=[4096,8192) element=8 tuned -> ") == 1u, log);
  BOOST_TEST(count_of(log, "gcl: automatic: P=3 bytes=[16,32) element=8 tuned -> ") == 1u, log);
  BOOST_TEST(count_of(log, "tree ") >= 2u, log);  // every candidate's trial times are listed
}

BOOST_AUTO_TEST_CASE(tuning_is_exact_through_the_trials_and_every_rank_settles_on_one_choice) {
  for (int p : {1, 2, 3, 4, 5, 8})
    for (std::size_t n : {std::size_t{0}, static_cast<std::size_t>(p + 1), std::size_t{1000}}) {
      gcl::automatic const a{.trials = 2, .min_race_seconds = 0, .shortlist = every};
      BOOST_TEST(a.max_trials == 6);
      auto const [fewest, most] = trial_call_bounds(a, p, n, 8, true);
      if (p > 1 && n > 0) BOOST_TEST(fewest == 2 * 2 * 6);  // every algorithm, 2 turns of 2
      auto r = run_tuned_sum(a, p, n, most + 2);            // then at least two settled calls
      for (int k = 0; k < p; ++k) {
        BOOST_TEST(r.wrong[k] == 0, "P=" << p << " n=" << n << " rank " << k);
        // Every rank settles on the same call, within the bounds, on the same algorithm.
        BOOST_TEST(r.settled_after[k] == r.settled_after[0], "P=" << p << " n=" << n);
        BOOST_TEST_REQUIRE(r.chosen[k].has_value(), "P=" << p << " n=" << n);
        BOOST_TEST((r.chosen[k] == r.chosen[0]), "P=" << p << " n=" << n);
      }
      if (most == 0) {  // nothing to tune: the model's choice from the first call
        BOOST_TEST(r.settled_after[0] == 1);
        BOOST_TEST((*r.chosen[0] == a.choose(p, n, 8, true)));
      } else {
        BOOST_TEST(r.settled_after[0] >= fewest, "P=" << p << " n=" << n);
        BOOST_TEST(r.settled_after[0] <= most, "P=" << p << " n=" << n);
      }
    }
}

// The floor as the race itself measures it. Each rank's race clock starts at its own first trial
// (the entry's `start`), and the race decides on the agreed maximum over ranks of the time since
// then, so when it settles the rank whose clock ran longest has seen at least min_race_seconds.
// A rank that reached its first trial late (descheduled, or slowed by a sanitizer) may itself
// have seen less: a floor asserted on every rank is what a loaded machine breaks. The largest
// clock cannot fall short however slow the machine is (load only lengthens the race), and a race
// that ignored the floor would settle 16 int64 in far less than 50 ms.
BOOST_AUTO_TEST_CASE(a_real_race_lasts_at_least_min_race_seconds) {
  gcl::automatic const a{.trials = 1, .min_race_seconds = 0.05};
  constexpr std::size_t n = 16;
  struct outcome {
    int calls = 0;
    std::size_t races = 0;                     // entries in this rank's tuning state
    double raced = 0;                          // this rank's race clock when the race settled
    std::vector<std::vector<double>> seconds;  // the agreed trial times this rank holds
  };
  auto out = gcl::spawn<counted>(3, [&](auto& comm) {
    std::vector<std::int64_t> v(n);
    outcome o;
    while (!a.tuned_choice(comm, n, 8, true) && o.calls < 1000000) {
      gcl::all_reduce(comm, v, gcl::sum{}, a);
      ++o.calls;
    }
    auto const settled = std::chrono::steady_clock::now();
    auto const& entries =
        comm.template cached<gcl::detail::automatic_tuning_of<gcl::automatic>>().entries;
    o.races = entries.size();
    if (o.races == 1) {
      auto const& e = entries.begin()->second;
      o.raced = std::chrono::duration<double>(settled - e.start).count();
      o.seconds = e.seconds;
    }
    return o;
  });
  double longest = 0;
  for (int r = 0; r < 3; ++r) {
    BOOST_TEST_INFO("rank " << r);
    BOOST_TEST_REQUIRE(out[r].races == 1u);    // one shape, one automatic: one race
    BOOST_TEST(out[r].calls == out[0].calls);  // every rank settles on the same call
    BOOST_TEST(out[r].calls < 1000000);
    BOOST_TEST((out[r].seconds == out[0].seconds));  // on the same agreed times
    longest = std::max(longest, out[r].raced);
  }
  BOOST_TEST(longest >= a.min_race_seconds);
}

BOOST_AUTO_TEST_CASE(the_state_lives_in_the_communicator) {
  constexpr int p = 4;
  constexpr std::size_t n = 100;
  gcl::automatic const a{.trials = 1, .min_race_seconds = 0, .shortlist = every};
  int const most = trial_call_bounds(a, p, n, 8, true).second;
  auto out = gcl::spawn<counted>(p, [&](auto& comm) {
    bool fresh =
        !gcl::automatic{.trials = 1, .min_race_seconds = 0, .shortlist = every}.tuned_choice(
            comm, n, 8, true);
    // A temporary in every call learns: the communicator keeps what it learned.
    int calls = 0;
    std::vector<std::int64_t> v(n);
    while (!a.tuned_choice(comm, n, 8, true) && calls <= most) {
      gcl::all_reduce(comm, v, gcl::sum{},
                      gcl::automatic{.trials = 1, .min_race_seconds = 0, .shortlist = every});
      ++calls;
    }
    // Another configuration on the same communicator keeps its own decisions.
    bool const other_untouched =
        !gcl::automatic{.trials = 2, .min_race_seconds = 0, .shortlist = every}.tuned_choice(
            comm, n, 8, true);
    return std::tuple(fresh, calls, other_untouched);
  });
  for (auto [fresh, calls, other_untouched] : out) {
    BOOST_TEST(fresh);
    BOOST_TEST(calls <= most);
    BOOST_TEST(calls == std::get<1>(out[0]));
    BOOST_TEST(other_untouched);
  }
  // A new communicator (a new group) starts afresh.
  auto again = gcl::spawn<counted>(
      p, [&](auto& comm) { return a.tuned_choice(comm, n, 8, true).has_value(); });
  for (bool settled : again) BOOST_TEST(!settled);
}

BOOST_AUTO_TEST_CASE(tuning_never_tries_ring_for_a_non_commutative_operator) {
  gcl::automatic const a{.trials = 2, .min_race_seconds = 0, .shortlist = every};
  for (int p : {2, 3, 4, 5, 8}) {
    std::size_t const n = 7;
    auto const cands = a.candidates(p, n, sizeof(affine), false);
    BOOST_TEST(cands.size() == 5u);
    for (auto c : cands) BOOST_TEST((c != choice::ring));
    int const calls = trial_call_bounds(a, p, n, sizeof(affine), false).second + 2;
    auto out = gcl::spawn<counted>(p, [&](auto& comm) {
      int wrong = 0;
      for (int c = 0; c < calls; ++c) {
        std::vector<affine> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = affine_of(comm.rank(), i);
        gcl::all_reduce(comm, v, compose{}, a);
        wrong += v != expected_composition(comm.size(), n);
      }
      return std::pair(wrong, a.tuned_choice(comm, n, sizeof(affine), false));
    });
    for (auto [w, c] : out) {
      BOOST_TEST(w == 0, "P=" << p);
      BOOST_TEST_REQUIRE(c.has_value());
      BOOST_TEST((*c != choice::ring));
    }
  }
  // The shortlist: only what the model predicts within the factor, its pick first.
  gcl::automatic const narrow{.trials = 1, .shortlist = 1.0};
  auto const only = narrow.candidates(4, 1000, 4, true);
  BOOST_TEST(only.size() >= 1u);
  BOOST_TEST((only[0] == narrow.choose(4, 1000, 4, true)));
}

// A toy all_reduce for the race: the tree's messages and schedule, with every call counted per
// rank, so that a test sees automatic run it.
struct toy {
  static constexpr std::string_view name = "toy";
  static constexpr bool needs_commutative = false;
  static inline std::array<std::atomic<int>, 8> calls{};  // per rank

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    calls[static_cast<std::size_t>(comm.rank())].fetch_add(1, std::memory_order_relaxed);
    gcl::tree{}.all_reduce(comm, data, op);
  }
  template <class F>
  static void schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
    gcl::tree::schedule(p, count, element_size, step);
  }
};

BOOST_AUTO_TEST_CASE(an_algorithm_added_in_one_line_is_raced_and_every_rank_agrees) {
  using with_toy = gcl::automatic::with<toy>;  // the one line: toy joins gcl's six
  static_assert(with_toy::choice_of<toy> == static_cast<with_toy::choice>(6));
  static_assert(with_toy::choice_of<gcl::ring> == with_toy::choice::ring);  // names kept
  BOOST_TEST(with_toy::choice_names[6] == "toy");

  constexpr int p = 3;
  constexpr std::size_t n = 1000;
  with_toy const a{.trials = 2, .min_race_seconds = 0, .shortlist = every};
  auto const cands = a.candidates(p, n, 8, true);
  BOOST_TEST_REQUIRE(cands.size() == 7u);  // every candidate, the toy among them
  for (auto& c : toy::calls) c = 0;
  struct outcome {
    int calls = 0, wrong = 0;
    std::optional<with_toy::choice> chosen;
    std::vector<std::vector<double>> seconds;  // the agreed trial times, per candidate
    std::vector<int> candidates;               // positions in with_toy's list, the race's order
    bool default_untouched = false;
  };
  auto out = gcl::spawn<counted>(p, [&](auto& comm) {
    outcome o;
    while (!(o.chosen = a.tuned_choice(comm, n, 8, true)) && o.calls < 1000) {
      auto make = [c = o.calls](int r, std::size_t i) { return value(r, i) + c; };
      std::vector<std::int64_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = make(comm.rank(), i);
      gcl::all_reduce(comm, v, gcl::sum{}, a);
      o.wrong += v != expected_sum<std::int64_t>(comm.size(), n, make);
      ++o.calls;
    }
    auto const& entries =
        comm.template cached<gcl::detail::automatic_tuning_of<with_toy>>().entries;
    if (entries.size() == 1) {
      o.seconds = entries.begin()->second.seconds;
      o.candidates = entries.begin()->second.candidates;
    }
    // Another list on the same communicator keeps its own state (its indices mean other
    // algorithms): gcl::automatic with the same settings has decided nothing.
    o.default_untouched =
        !gcl::automatic{.trials = 2, .min_race_seconds = 0, .shortlist = every}.tuned_choice(
            comm, n, 8, true);
    return o;
  });
  auto const toy_at = static_cast<int>(with_toy::choice_of<toy>);
  for (int r = 0; r < p; ++r) {
    BOOST_TEST_INFO("rank " << r);
    BOOST_TEST(out[r].wrong == 0);
    BOOST_TEST(out[r].calls < 1000);
    BOOST_TEST(out[r].calls == out[0].calls);  // every rank settles on the same call
    BOOST_TEST_REQUIRE(out[r].chosen.has_value());
    BOOST_TEST((out[r].chosen == out[0].chosen));  // on the same algorithm
    BOOST_TEST((out[r].seconds == out[0].seconds));
    BOOST_TEST(out[r].default_untouched);
    // The toy ran: at least `trials` turns of two calls (a warm-up and a counted one) per rank.
    BOOST_TEST(toy::calls[static_cast<std::size_t>(r)].load() >= 2 * a.trials);
    // ... and was timed: its agreed times are in the race.
    auto const at = std::find(out[r].candidates.begin(), out[r].candidates.end(), toy_at);
    BOOST_TEST_REQUIRE((at != out[r].candidates.end()));
    auto const& toy_times =
        out[r].seconds[static_cast<std::size_t>(at - out[r].candidates.begin())];
    BOOST_TEST(toy_times.size() >= static_cast<std::size_t>(a.trials));
    for (double t : toy_times) BOOST_TEST(t > 0.0);
  }
}

// The fixed algorithm `c` on a fresh group, one call, under counting.
run_result<std::int64_t> run_fixed(choice c, int p, std::size_t n) {
  switch (c) {
    case choice::tree:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::tree{}, value);
    case choice::ring:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::ring{}, value);
    case choice::recursive_doubling:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::recursive_doubling{}, value);
    case choice::halving_doubling:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::halving_doubling{}, value);
    case choice::direct:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::direct{}, value);
    case choice::parameter_server:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::parameter_server{}, value);
  }
  return {};
}

BOOST_AUTO_TEST_CASE(after_tuning_a_call_sends_exactly_what_the_chosen_algorithm_sends) {
  for (int p : {2, 3, 4, 7, 8})
    for (std::size_t n : {static_cast<std::size_t>(p), std::size_t{1000}}) {
      gcl::automatic const a{.trials = 1, .min_race_seconds = 0, .shortlist = every};
      auto r = run_tuned_sum(a, p, n, trial_call_bounds(a, p, n, 8, true).second + 1);
      for (int w : r.wrong) BOOST_TEST(w == 0);
      BOOST_TEST_REQUIRE(r.chosen[0].has_value());
      auto const fixed = run_fixed(*r.chosen[0], p, n);
      for (int k = 0; k < p; ++k) {
        BOOST_TEST(r.last[k].messages_sent == fixed.per_rank[k].messages_sent,
                   "P=" << p << " n=" << n << " rank " << k);
        BOOST_TEST(r.last[k].bytes_sent == fixed.per_rank[k].bytes_sent);
        BOOST_TEST((r.last[k].sent_sizes == fixed.per_rank[k].sent_sizes));
      }
      // A trial call also has a barrier and agrees its time and the race's duration.
      auto t = run_tuned_sum(a, p, n, 1);
      auto const first = run_fixed(a.candidates(p, n, 8, true)[0], p, n);
      BOOST_TEST(t.last[0].messages_sent > first.per_rank[0].messages_sent);
    }
}

BOOST_AUTO_TEST_CASE(every_choice_is_exact_for_a_non_commutative_operator) {
  // Models that make each algorithm but ring (excluded: it reorders) the cheapest.
  gcl::automatic const latency_bound{.model = {.alpha = 1e-5, .beta = 1e-12, .gamma = 0},
                                     .trials = 0};
  gcl::automatic const bandwidth_bound{.model = {.alpha = 1e-9, .beta = 1e-8, .gamma = 1e-9},
                                       .trials = 0};
  for (auto const& a : {latency_bound, bandwidth_bound})
    for (int p = 1; p <= 9; ++p)
      for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{300}}) {
        BOOST_TEST((a.choose(p, n, sizeof(affine), false) != choice::ring));
        auto r = run<affine>(p, n, compose{}, a, affine_of);
        auto e = expected_composition(p, n);
        for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " n=" << n);
      }
}

BOOST_AUTO_TEST_CASE(picks_ring_for_large_commutative_reductions_when_links_are_separate) {
  // A network-like model: ring and halving-doubling move the least data per rank; with a
  // large per-round latency and many ranks, halving-doubling's 2 log2 P rounds beat the ring's
  // 2(P-1), and with no latency at all they tie and the ring (earlier in the list) wins.
  gcl::automatic const net{.model = {.alpha = 0, .beta = 1e-9, .gamma = 1e-10}};
  BOOST_TEST((net.choose(8, 1 << 20, 4, true) == choice::ring));
  gcl::automatic const slow{.model = {.alpha = 1e-4, .beta = 1e-9, .gamma = 1e-10}};
  BOOST_TEST((slow.choose(8, 1 << 20, 4, true) == choice::halving_doubling));
  // Threads sharing one core: total work decides, and the tree has the fewest rounds of the
  // algorithms that move the least in total.
  gcl::automatic const one_core{
      .model = {.alpha = 1e-7, .beta = 1e-10, .gamma = 1e-10, .latency = 4e-6, .parallelism = 1}};
  auto c = one_core.choose(4, 1 << 22, 4, true);
  BOOST_TEST((c == choice::tree || c == choice::parameter_server));
  BOOST_TEST(gcl::automatic::choice_names[static_cast<std::size_t>(choice::direct)] == "direct");
}

BOOST_AUTO_TEST_CASE(ring_runs_a_block_at_a_time_as_the_default_runs_it) {
  // automatic's ring is the one by_size runs on the transport, a cache-sized block at a time,
  // not the whole buffer at once: what the race times and the winner runs. Two threads take
  // blocks of 8 MiB (16 MiB where they share a core), so a block and 1 MiB more is two blocks.
  constexpr int p = 2;
  bool const shared = static_cast<unsigned>(p) > std::thread::hardware_concurrency();
  auto const blocked = gcl::by_size::ring_of(gcl::detail::thresholds_of<counted>(), p, shared);
  std::size_t const n = (blocked.block_bytes + (std::size_t{1} << 20)) / sizeof(std::int64_t);
  BOOST_TEST_REQUIRE(blocked.blocks(n, sizeof(std::int64_t)) == 2u);
  auto const want = run<std::int64_t>(p, n, gcl::sum{}, blocked, value);
  auto const whole = run<std::int64_t>(p, n, gcl::sum{}, gcl::ring{}, value);
  for (int trials : {0, 2}) {  // the model's pick; a race (of ring alone), then its winner
    gcl::automatic_of<gcl::ring> const a{.trials = trials, .min_race_seconds = 0};
    auto out = gcl::spawn<counted>(p, [&](auto& comm) {
      int wrong = 0, calls = 0;
      auto call = [&] {
        std::vector<std::int64_t> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = value(comm.rank(), i);
        comm.transport().reset();
        gcl::all_reduce(comm, v, gcl::sum{}, a);
        wrong += v != want.data[static_cast<std::size_t>(comm.rank())];
        ++calls;
      };
      do call();
      while (calls < 10 && !a.tuned_choice(comm, n, 8, true));
      bool const settled = a.tuned_choice(comm, n, 8, true).has_value();
      call();  // settled: the winner alone, no trial's barrier or agreement
      return std::tuple(wrong, settled, comm.transport().stats());
    });
    for (int k = 0; k < p; ++k) {
      auto const& [wrong, settled, last] = out[static_cast<std::size_t>(k)];
      auto const& fixed = want.per_rank[static_cast<std::size_t>(k)];
      BOOST_TEST(wrong == 0, "trials " << trials << " rank " << k);
      BOOST_TEST(settled, "trials " << trials << ": never settled");
      BOOST_TEST(last.messages_sent == fixed.messages_sent, "trials " << trials << " rank " << k);
      BOOST_TEST((last.sent_sizes == fixed.sent_sizes), "trials " << trials << " rank " << k);
      BOOST_TEST(fixed.messages_sent != whole.per_rank[static_cast<std::size_t>(k)].messages_sent);
    }
  }
}
