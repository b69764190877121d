#pragma once
/// \file
/// `gcl::recursive_doubling`: all_reduce in log2 P exchange steps of the whole vector. At step
/// k (mask 2^k) every rank exchanges its partial result with rank `v xor 2^k` and combines.
/// P log2 P messages of p elements in log2 P rounds when P is a power of two: the fewest rounds
/// of any all_reduce here, at the price of sending everything every round (latency bound data).
///
/// Any P: with P' the largest power of two <= P and r = P - P', the first 2r ranks fold in
/// pairs before (even rank 2i sends its vector to 2i + 1, which combines) and unfold after
/// (2i + 1 sends the result back to 2i). Exactly P' log2 P' + 2r messages of p elements. Rounds
/// (longest chain of dependent messages): log2 P' when r = 0, log2 P' + 1 when 0 < r <= P'/2,
/// log2 P' + 2 when r > P'/2 (the unfold only lengthens the chain when two folded survivors are
/// log2 P' exchanges apart).
///
/// Operand order is kept: the survivors are numbered so that each one stands for a contiguous,
/// increasing range of ranks, and at every step the partner with the lower range is the left
/// operand. So non-commutative (associative) operators work, and both partners compute
/// `op(lower, higher)` on identical operands: every rank ends with bit-identical results.

#include <bit>
#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/reduce_kernel.hpp"

namespace gcl {

namespace detail {

/// The standard fold of P ranks onto P' = 2^levels: ranks [0, 2r) pair up (2i, 2i+1) and the
/// odd one survives as `i`; ranks [2r, P) survive as `rank - r`. Survivor numbering is
/// monotone in the ranks it stands for, which is what keeps operand order.
struct pow2_fold {
  int size = 1;
  int pow2 = 1;    ///< P', the largest power of two <= size
  int levels = 0;  ///< log2 P'
  int extra = 0;   ///< r = size - P'

  explicit constexpr pow2_fold(int p) noexcept
      : size(p),
        pow2(static_cast<int>(std::bit_floor(static_cast<unsigned>(p)))),
        levels(std::countr_zero(static_cast<unsigned>(pow2))),
        extra(p - pow2) {}

  /// -1 if `rank` sits out the power-of-two phase (an even rank below 2r), else its number.
  constexpr int survivor(int rank) const noexcept {
    if (rank < 2 * extra) return rank % 2 == 1 ? rank / 2 : -1;
    return rank - extra;
  }
  /// The rank that survivor `v` is.
  constexpr int rank_of(int v) const noexcept { return v < extra ? 2 * v + 1 : v + extra; }
};

// Fold: an even rank below 2r hands its vector to its odd neighbour and returns true (it then
// waits for the result in `unfold`). The odd neighbour combines, lower rank on the left.
template <class Comm, class T, class Op>
bool fold_in(Comm& comm, pow2_fold const& f, std::span<T> data, std::span<T> tmp, Op const& op) {
  int const me = comm.rank();
  if (me >= 2 * f.extra) return false;
  if (me % 2 == 0) {
    comm.send(me + 1, std::span<T const>(data), collective_tag);
    return true;
  }
  comm.recv(me - 1, tmp, collective_tag);
  reduce_from_lower(data.data(), tmp.data(), data.size(), op);
  return false;
}

template <class Comm, class T>
void fold_out(Comm& comm, pow2_fold const& f, std::span<T> data) {
  int const me = comm.rank();
  if (me >= 2 * f.extra) return;
  if (me % 2 == 0)
    comm.recv(me + 1, data, collective_tag);
  else
    comm.send(me - 1, std::span<T const>(data), collective_tag);
}

}  // namespace detail

/// Recursive doubling (see the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::recursive_doubling{});
///     gcl::all_reduce(comm, m, matmul, gcl::recursive_doubling{});  // non-commutative: fine
struct recursive_doubling {
  static constexpr std::string_view name = "recursive_doubling";
  /// Partners combine lower range first, so rank order is kept.
  static constexpr bool needs_commutative = false;

  /// All-reduce in place. Every step sends the whole vector, even when it is empty, so the
  /// message count does not depend on the count.
  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    detail::pow2_fold const f(comm.size());
    if (f.size == 1) return;
    auto tmp = comm.template scratch<T>(data.size(), 0);
    if (!detail::fold_in(comm, f, data, tmp, op)) {
      int const v = f.survivor(comm.rank());
      for (int mask = 1; mask < f.pow2; mask <<= 1) {
        int const partner = f.rank_of(v ^ mask);
        comm.sendrecv(partner, std::span<T const>(data), partner, tmp, detail::collective_tag);
        if ((v & mask) != 0)
          detail::reduce_from_lower(data.data(), tmp.data(), data.size(), op);
        else
          detail::reduce_into(data.data(), tmp.data(), data.size(), op);
      }
    }
    detail::fold_out(comm, f, data);
  }

  /// The critical path, one `cost_step` per round (see cost_model.hpp).
  template <class F>
  static void schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
    detail::pow2_fold const f(p);
    std::size_t const bytes = count * element_size;
    auto const extra = static_cast<std::size_t>(f.extra), all = static_cast<std::size_t>(f.pow2);
    if (f.extra > 0) step(cost_step{1, bytes, bytes, extra});
    for (int k = 0; k < f.levels; ++k) step(cost_step{1, bytes, bytes, all});
    if (f.extra > 0) step(cost_step{1, bytes, 0, extra});
  }
};

}  // namespace gcl
