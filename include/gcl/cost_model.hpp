#pragma once
/// \file
/// The alpha-beta-gamma cost model: a message of n bytes costs `alpha + n beta`, reducing n
/// bytes costs `n gamma`. Each algorithm describes its critical path as a list of rounds
/// (`cost_step`: how many messages the busiest rank handles one after the other in that round,
/// the largest of them in bytes, and the bytes it reduces), and `predict` sums
/// `messages (alpha + bytes beta) + reduced gamma` over the rounds. The closed forms of
/// doc/algorithms.md follow from the schedules; they are not a second copy of them.
///
/// Each algorithm's header includes this one and defines its `schedule` next to its all_reduce;
/// this header includes no algorithm (so an algorithm written outside gcl is priced the same way
/// as gcl's own).
///
///     gcl::cost_model m{.alpha = 5e-6, .beta = 1e-10, .gamma = 2e-10};
///     double t = m.predict(gcl::ring{}, 8, 4 << 20);      // 8 ranks, 4 MiB (with ring.hpp)
///     auto live = gcl::calibrate(comm);                   // measured: calibrate.hpp

#include <cstddef>

namespace gcl {

/// One round of an algorithm's critical path: the busiest rank handles `messages` messages of
/// at most `bytes` bytes one after another, and reduces `reduced_bytes` bytes, while
/// `concurrent` ranks do the same kind of work at the same time (what matters where ranks
/// share cores and memory, as threads do: see `cost_model::parallelism`).
///
///     gcl::cost_step s{.messages = 1, .bytes = 4096, .reduced_bytes = 4096, .concurrent = 4};
struct cost_step {
  std::size_t messages = 1;
  std::size_t bytes = 0;
  std::size_t reduced_bytes = 0;
  std::size_t concurrent = 1;
};

/// An algorithm that describes its all_reduce critical path: `alg.schedule(P, count,
/// element_size, f)` calls `f(cost_step)` once per round. Every algorithm keeps its schedule
/// beside its all_reduce, in its own header (which includes this one), so that the two are read
/// and changed together, and this header knows no algorithm.
template <class Alg>
concept scheduled_algorithm = requires(Alg const& a, int p, std::size_t n, void (*f)(cost_step)) {
  a.schedule(p, n, n, f);
};

/// Calls `f(cost_step)` for each round of `alg`'s all_reduce of `count` elements of
/// `element_size` bytes on `p` ranks.
///
///     gcl::for_each_step(gcl::ring{}, 4, 1000, 4, [](gcl::cost_step s) { ... });
template <class Alg, class F>
void for_each_step(Alg const& alg, int p, std::size_t count, std::size_t element_size, F&& f) {
  static_assert(scheduled_algorithm<Alg>,
                "gcl::cost_model: this algorithm has no member schedule(P, count, element_size, "
                "f) describing its rounds, so its cost cannot be predicted");
  if constexpr (scheduled_algorithm<Alg>)  // no second error after the static_assert
    alg.schedule(p, count, element_size, f);
}

/// Latency `alpha` (seconds per message), inverse bandwidth `beta` (seconds per byte) and
/// reduction cost `gamma` (seconds per reduced byte). The defaults are of the order of threads
/// on one machine; `calibrate` measures them on a live communicator.
///
///     gcl::cost_model m;                                  // defaults
///     bool ring_wins = m.predict(gcl::ring{}, 4, 1 << 20) < m.predict(gcl::tree{}, 4, 1 << 20);
struct cost_model {
  double alpha = 5e-6;   ///< seconds per message
  double beta = 2e-10;   ///< seconds per byte on the wire
  double gamma = 2e-10;  ///< seconds per reduced byte
  /// Seconds per round on top of the messages' own cost: the wait for a peer that must first
  /// receive before it can send (a wake-up on threads, a network latency beyond the sender's
  /// per-message overhead). 0 gives the classic alpha-beta model, in which alpha is both.
  double latency = 0;
  /// How many ranks can copy and reduce at full speed at once; 0 means all of them (ranks on
  /// separate machines). Ranks that are threads share cores and memory bandwidth, so besides
  /// the critical path (the span) the total work of all ranks divided by `parallelism` bounds
  /// the time from below, and `predict` takes the larger (Brent's bound). `calibrate`
  /// measures it.
  double parallelism = 0;

  /// Seconds for one round on the critical path: `latency + messages (alpha + bytes beta) +
  /// reduced gamma`.
  constexpr double time(cost_step s) const noexcept {
    return latency +
           static_cast<double>(s.messages) * (alpha + static_cast<double>(s.bytes) * beta) +
           static_cast<double>(s.reduced_bytes) * gamma;
  }
  /// Seconds of work of all `s.concurrent` ranks in a round (no latency: waiting is not work).
  constexpr double work(cost_step s) const noexcept {
    return static_cast<double>(s.concurrent) * (time(s) - latency);
  }

  /// Predicted seconds of `alg`'s all_reduce of `bytes` bytes per rank on `p` ranks, in
  /// elements of `element_size` bytes (which decides how uneven chunks are).
  template <class Alg>
  double predict(Alg const& alg, int p, std::size_t bytes, std::size_t element_size = 1) const {
    double span = 0, total = 0;
    for_each_step(alg, p, bytes / element_size, element_size, [&](cost_step s) {
      span += time(s);
      total += work(s);
    });
    return parallelism > 0 && total / parallelism > span ? total / parallelism : span;
  }

  friend bool operator==(cost_model const&, cost_model const&) = default;
};

}  // namespace gcl

// `calibrate`, which measures a model on a live communicator, has a header of its own; it is
// included here because it used to be defined in this one, and code that includes only
// cost_model.hpp calls it. calibrate.hpp includes this header before it uses the model and
// includes no algorithm header, so either include order works.
#include "calibrate.hpp"
