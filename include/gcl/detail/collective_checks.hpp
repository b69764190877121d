#pragma once
/// \file
/// What every collective checks before it sends anything: argument sizes and roots (a
/// `usage_error` naming the rank and the sizes), and at compile time that the algorithm
/// implements the collective and accepts the operator.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "../concepts.hpp"
#include "../error.hpp"
#include "error_text.hpp"

namespace gcl::detail {

/// The one place that rejects a non-commutative operator for an algorithm that reorders.
template <class Alg, class Op, class T>
consteval bool check_op() {
  static_assert(reduction_op<Op, T>,
                "gcl: the operator must be callable as op(T const&, T const&) and return T");
  static_assert(!Alg::needs_commutative || commutative_op<Op, T>,
                "gcl: this algorithm (ring, halving_doubling, ...) combines chunks in a different "
                "operand order on each rank, so it needs a commutative operator. Use gcl::tree{}, "
                "which keeps rank order, or declare the operator commutative with "
                "gcl::commutative(f) or `static constexpr bool commutative = true;`.");
  return true;
}

/// "gcl: rank 3: all_reduce: ", the start of a collective's usage errors.
inline std::string rank_prefix(int rank, std::string_view collective) {
  return rank_prefix(rank) + std::string(collective) + ": ";
}

/// `root` must be a rank of the group.
inline void check_root(int rank, int size, int root, std::string_view collective) {
  if (root < 0 || root >= size)
    throw usage_error(rank_prefix(rank, collective) + "root " + std::to_string(root) +
                      " is out of range for world size " + std::to_string(size) + " (ranks 0.." +
                      std::to_string(size - 1) + ")");
}

/// `what` must have `expected` elements. `why()` explains `expected`; it is only called (and
/// its string only built) on failure, so a warm collective allocates nothing here.
template <class Why>
void check_size(int rank, std::string_view collective, std::string_view what, std::size_t got,
                std::size_t expected, Why const& why) {
  if (got != expected)
    throw usage_error(rank_prefix(rank, collective) + std::string(what) + " has " +
                      std::to_string(got) + " elements, but " + std::to_string(expected) +
                      " are required (" + std::string(why()) + ")");
}

/// `what` must have a multiple of the world size of elements.
inline void check_divisible(int rank, int size, std::string_view collective, std::string_view what,
                            std::size_t got) {
  if (got % static_cast<std::size_t>(size) != 0)
    throw usage_error(
        rank_prefix(rank, collective) + std::string(what) + " has " + std::to_string(got) +
        " elements, which is not a multiple of the world size " + std::to_string(size));
}

/// The sum of `counts`: the elements a variable-count collective moves in all.
inline std::size_t sum_of(std::span<std::size_t const> counts) noexcept {
  std::size_t n = 0;
  for (auto c : counts) n += c;
  return n;
}

/// `counts` (of a variable-count collective) must have one entry per rank.
inline void check_counts(int rank, int size, std::string_view collective, std::string_view what,
                         std::span<std::size_t const> counts) {
  if (counts.size() != static_cast<std::size_t>(size))
    throw usage_error(rank_prefix(rank, collective) + std::string(what) + " has " +
                      std::to_string(counts.size()) +
                      " entries, but one per rank is required (world size " + std::to_string(size) +
                      ")");
}

}  // namespace gcl::detail
