#pragma once
/// \file
/// Binomial tree arithmetic on ranks relative to the root (`rel = (rank - root) mod P`, so the
/// root is 0). Steps are numbered from 1, as in doc/algorithms.md.
///
/// Reduce phase, step i: the ranks with `rel mod 2^i == 2^(i-1)` send to `rel - 2^(i-1)`; the
/// ranks with `rel mod 2^i == 0` receive from `rel + 2^(i-1)` if that is `< P`. So a rank sends
/// once, at the step given by its lowest set bit, after receiving from all its children; the
/// root sends never. Broadcast runs the same edges in reverse order.
///
/// Why this keeps operand order: after step i, rank `rel` (a multiple of 2^i) holds the
/// combination of the contiguous range `[rel, min(rel + 2^i, P))`, and it receives the range
/// just to its right, so `acc = op(acc, received)` combines in increasing `rel` order.

#include <bit>

namespace gcl::detail {

/// `(rank - root) mod size`: the root is 0.
constexpr int relative_rank(int rank, int root, int size) noexcept {
  return ((rank - root) % size + size) % size;
}
/// The inverse of `relative_rank`.
constexpr int absolute_rank(int rel, int root, int size) noexcept {
  return (rel + root) % size;
}

/// Steps per phase: `ceil(log2 size)` (0 for one rank).
constexpr int binomial_steps(int size) noexcept {
  return size <= 1 ? 0 : static_cast<int>(std::bit_width(static_cast<unsigned>(size - 1)));
}

/// The 1-based step at which `rel` sends to its parent in the reduce phase (its lowest set
/// bit, plus one); 0 for the root, which never sends.
constexpr int binomial_send_step(int rel) noexcept {
  return rel == 0 ? 0 : std::countr_zero(static_cast<unsigned>(rel)) + 1;
}

/// The last step of the reduce phase at which `rel` may receive from a child: the one before it
/// sends, every step for the root. Its children come at steps 1 to this (broadcast: in reverse).
constexpr int binomial_last_child_step(int rel, int size) noexcept {
  return rel == 0 ? binomial_steps(size) : binomial_send_step(rel) - 1;
}

/// The partner n' of `rel` at step `i` of the reduce phase: the rank it sends to,
/// `rel - 2^(i-1)`, or -1 if `rel` does not send at step `i` (unless `rel mod 2^i == 2^(i-1)`).
constexpr int binomial_partner(int rel, int i) noexcept {
  int half = 1 << (i - 1);
  return rel % (2 * half) == half ? rel - half : -1;
}

/// The parent of `rel` (the rank it sends to in the reduce phase); -1 for the root.
constexpr int binomial_parent(int rel) noexcept {
  return rel == 0 ? -1 : rel & (rel - 1);  // clear the lowest set bit
}

/// The child `rel` receives from at step `i` of the reduce phase (`rel + 2^(i-1)`), or -1.
constexpr int binomial_child(int rel, int i, int size) noexcept {
  int half = 1 << (i - 1);
  if (rel % (2 * half) != 0) return -1;
  return rel + half < size ? rel + half : -1;
}

/// Ranks in the subtree rooted at `rel`: `[rel, rel + subtree_size)` in relative order.
constexpr int binomial_subtree_size(int rel, int size) noexcept {
  if (rel == 0) return size;
  int span = rel & -rel;  // lowest set bit
  return span < size - rel ? span : size - rel;
}

/// Number of children of `rel`: the steps before its send step at which it has a child.
constexpr int binomial_child_count(int rel, int size) noexcept {
  int const last = binomial_last_child_step(rel, size);
  int n = 0;
  for (int i = 1; i <= last; ++i) n += binomial_child(rel, i, size) >= 0;
  return n;
}

}  // namespace gcl::detail
