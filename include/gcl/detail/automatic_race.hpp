#pragma once
/// \file
/// The race behind `gcl::automatic`'s measured tuning (algorithm/automatic.hpp), apart from the
/// policy that runs it: the state a communicator keeps per decision (`automatic_tuning`) and the
/// state machine that turns agreed trial times into a decision (`automatic_race`). Nothing here
/// sends a message or knows an algorithm: candidates are indices into the automatic's list, and
/// every input is a number all ranks agreed on, so every rank takes the same steps. That is also
/// what lets test/algorithm/automatic.cpp drive the race with made-up times.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "statistics.hpp"

namespace gcl::detail {

// A tuning automatic's progress on one communicator (kept there: `communicator::cached`). Each
// rank's communicator is used by one thread at a time, so no lock is needed.
struct automatic_tuning {
  struct entry {
    std::vector<int> candidates;                  // choice indices, the model's order
    std::vector<std::vector<double>> seconds;     // per candidate, agreed (max over ranks)
    std::vector<bool> racing;                     // still in the race
    std::size_t turn = 0;                         // index of the candidate whose turn it is
    bool warming = true;                          // the turn's next call is its warm-up
    int chosen = -1;                              // choice index once tuned
    std::chrono::steady_clock::time_point start;  // this rank's first trial
  };
  // The automatic's settings that shape a decision (trials, max_trials, min_race_seconds,
  // shortlist, model), then P, size class, element size, commutative: two differently
  // configured automatics on one communicator keep separate decisions.
  using key = std::tuple<int, int, double, double, double, double, double, double, double, int, int,
                         std::size_t, bool>;
  std::map<key, entry> entries;

  // The entry for `k`, made if new. The last one found is remembered: a loop that calls one shape
  // finds it with one key comparison instead of a map search (at sub-microsecond call times the
  // search alone would cost several percent).
  entry& find(key const& k) {
    if (last_ == nullptr || last_->first != k) last_ = &*entries.try_emplace(k).first;
    return last_->second;
  }

 private:
  std::map<key, entry>::value_type* last_ = nullptr;  // map nodes never move
};

// Records one trial call of `e.candidates[e.turn]` that took `seconds`, the race having lasted
// `elapsed` (both agreed by all ranks). A turn is two calls of its candidate: the first warms up
// and is not counted, so that the counted call follows a call of its own algorithm, as every
// call does once settled (after another algorithm, the caches and the waiting threads are in
// that one's state: at MiB sizes that alone changes the time by half). Then the turn moves to
// the next candidate still racing. When that completes a round (every racing candidate then
// has the same number of times), each has `trials` times and the race has lasted `min_seconds`,
// drops those clearly behind the leader (the least median), whose lower quartile is above the
// leader's upper quartile: their times hardly overlap (with 3 times: the fastest above the
// leader's slowest, so that a leader's lucky start cannot drop what later proves faster). It
// settles (`chosen`) when one is left or the times reach `max_trials`: the least median, ties
// to the model's order. The inputs are agreed, so every rank settles on the same call and
// the same candidate.
inline void automatic_race(automatic_tuning::entry& e, double seconds, double elapsed, int trials,
                           int max_trials, double min_seconds = 0) {
  if (std::exchange(e.warming, !e.warming)) return;
  e.seconds[e.turn].push_back(seconds);
  std::size_t const n = e.candidates.size(), previous = e.turn;
  do e.turn = (e.turn + 1) % n;
  while (!e.racing[e.turn]);
  if (e.turn > previous) return;  // the round goes on
  std::size_t const samples = e.seconds[e.turn].size();
  if (samples < static_cast<std::size_t>(std::max(trials, 1)) || elapsed < min_seconds) return;
  std::size_t leader = n;
  double best = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!e.racing[i]) continue;
    double const median = lower_median(e.seconds[i]);  // sorts a copy: once per candidate
    if (leader == n || median < best) leader = i, best = median;
  }
  double const leader_upper = quantile(e.seconds[leader], 0.75, false);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (e.racing[i] && quantile(e.seconds[i], 0.25) > leader_upper) e.racing[i] = false;
    left += e.racing[i];
  }
  if (left == 1 || samples >= static_cast<std::size_t>(std::max(max_trials, trials)))
    e.chosen = e.candidates[leader];
  else
    e.turn = static_cast<std::size_t>(std::find(e.racing.begin(), e.racing.end(), true) -
                                      e.racing.begin());
}

}  // namespace gcl::detail
