#pragma once
/// \file
/// The alpha-beta-gamma cost model: a message of n bytes costs `alpha + n beta`, reducing n
/// bytes costs `n gamma`. Each algorithm describes its critical path as a list of rounds
/// (`cost_step`: how many messages the busiest rank handles one after the other in that round,
/// the largest of them in bytes, and the bytes it reduces), and `predict` sums
/// `messages (alpha + bytes beta) + reduced gamma` over the rounds. The closed forms of
/// doc/algorithms.md follow from the schedules; they are not a second copy of them.
///
///     gcl::cost_model m{.alpha = 5e-6, .beta = 1e-10, .gamma = 2e-10};
///     double t = m.predict(gcl::ring{}, 8, 4 << 20);      // 8 ranks, 4 MiB
///     auto live = gcl::calibrate(comm);                   // measured: calibrate.hpp

#include <algorithm>
#include <concepts>
#include <cstddef>

#include "algorithm/ring.hpp"
#include "algorithm/tree.hpp"
#include "detail/binomial.hpp"
#include "detail/chunk.hpp"

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
/// element_size, f)` calls `f(cost_step)` once per round.
template <class Alg>
concept scheduled_algorithm = requires(Alg const& a, int p, std::size_t n, void (*f)(cost_step)) {
  a.schedule(p, n, n, f);
};

namespace detail {

// The schedules of the core algorithms (tree.hpp and ring.hpp), kept here so that those headers
// need not know about costs. Binomial tree: ceil(log2 P) rounds of one full message up (with a
// reduction), the same down (the root handles one message per level, one after the other).
// Ring: P - 1 rounds of the largest chunk with a reduction, P - 1 without.
template <class F>
void tree_schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
  std::size_t const bytes = count * element_size;
  int const levels = binomial_steps(p);
  // Level i moves one message from every rel whose lowest set bit is 2^i.
  auto senders = [p](int i) {
    std::size_t n = 0;
    for (int rel = 1; rel < p; ++rel) n += binomial_send_step(rel) == i + 1;
    return n;
  };
  for (int i = 0; i < levels; ++i) step(cost_step{1, bytes, bytes, senders(i)});
  for (int i = levels - 1; i >= 0; --i) step(cost_step{1, bytes, 0, senders(i)});
}
template <class F>
void ring_schedule(ring const& alg, int p, std::size_t count, std::size_t element_size, F&& step) {
  if (p <= 1) return;
  std::size_t const chunk_elements = chunk_layout{count, p}.max_size();
  std::size_t const chunk = chunk_elements * element_size, all = static_cast<std::size_t>(p);
  std::size_t const s = std::max<std::size_t>(alg.segment_bytes / element_size, 1);
  if (alg.segment_bytes == 0 || s >= chunk_elements) {
    for (int i = 0; i < p - 1; ++i) step(cost_step{1, chunk, chunk, all});
    for (int i = 0; i < p - 1; ++i) step(cost_step{1, chunk, 0, all});
    return;
  }
  // Segmented: a step is ceil(chunk / s) messages of s elements back to back, and only the
  // last segment's reduction is not hidden behind the transfer of the next.
  std::size_t const segments = (chunk_elements + s - 1) / s, seg = s * element_size;
  for (int i = 0; i < p - 1; ++i) step(cost_step{segments, seg, seg, all});
  for (int i = 0; i < p - 1; ++i) step(cost_step{segments, seg, 0, all});
}

}  // namespace detail

/// Calls `f(cost_step)` for each round of `alg`'s all_reduce of `count` elements of
/// `element_size` bytes on `p` ranks.
///
///     gcl::for_each_step(gcl::ring{}, 4, 1000, 4, [](gcl::cost_step s) { ... });
template <class Alg, class F>
void for_each_step(Alg const& alg, int p, std::size_t count, std::size_t element_size, F&& f) {
  if constexpr (std::same_as<Alg, tree>)
    detail::tree_schedule(p, count, element_size, f);
  else if constexpr (std::same_as<Alg, ring>)
    detail::ring_schedule(alg, p, count, element_size, f);
  else {
    static_assert(scheduled_algorithm<Alg>,
                  "gcl::cost_model: this algorithm has no member schedule(P, count, element_size, "
                  "f) describing its rounds, so its cost cannot be predicted");
    alg.schedule(p, count, element_size, f);
  }
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
