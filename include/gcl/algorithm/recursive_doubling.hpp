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

#include <algorithm>
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

/// Recursive doubling (see the file comment), and scan and exscan by recursive doubling of the
/// distance (Hillis and Steele): at step k (from 0, while 2^k < P) rank n sends its partial
/// result to rank n + 2^k and combines the one of rank n - 2^k on the left.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::recursive_doubling{});
///     gcl::all_reduce(comm, m, matmul, gcl::recursive_doubling{});  // non-commutative: fine
///     gcl::scan(comm, v, gcl::sum{}, gcl::recursive_doubling{});
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

  /// Inclusive prefix in place: rank n ends with `op` over ranks 0..n, in rank order. After step
  /// k, rank n holds the combination of ranks `max(0, n - 2^(k+1) + 1) .. n`, and what it
  /// receives at step k + 1 is the range just below it, so it is always the left operand.
  /// Every step sends the whole vector, even when it is empty: `L P - (2^L - 1)` messages for
  /// `L = ceil(log2 P)`, in L steps.
  template <class Comm, class T, class Op>
  void scan(Comm& comm, std::span<T> data, Op const& op) const {
    prefix(comm, data, op, false);
  }

  /// Exclusive prefix in place: rank n > 0 ends with `op` over ranks 0..n-1, in rank order;
  /// rank 0's data is left unchanged. The messages of `scan`; the exclusive result gathers
  /// what a rank receives, its inclusive partial result (in scratch) what it sends on.
  template <class Comm, class T, class Op>
  void exscan(Comm& comm, std::span<T> data, Op const& op) const {
    prefix(comm, data, op, true);
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

 private:
  // Sends before it receives at each step (sends are eager), so no order of ranks deadlocks.
  template <class Comm, class T, class Op>
  static void prefix(Comm& comm, std::span<T> data, Op const& op, bool exclusive) {
    int const p = comm.size(), n = comm.rank();
    if (p == 1) return;
    auto tmp = comm.template scratch<T>(data.size(), 0);
    // Inclusive: the partial result is `data` itself. Exclusive: a copy, and `data` collects
    // what arrives (the first arrival is copied, later ones are combined on its left).
    std::span<T> acc = data;
    if (exclusive) {
      acc = comm.template scratch<T>(data.size(), 1);
      std::copy(data.begin(), data.end(), acc.begin());
    }
    bool received = false;
    for (int d = 1; d < p; d <<= 1) {
      if (n + d < p) comm.send(n + d, std::span<T const>(acc), detail::collective_tag);
      if (n - d < 0) continue;
      comm.recv(n - d, tmp, detail::collective_tag);
      if (exclusive) {
        if (received)
          detail::reduce_from_lower(data.data(), tmp.data(), data.size(), op);
        else
          std::copy(tmp.begin(), tmp.end(), data.begin());
        received = true;
        if (n + 2 * d >= p) continue;  // nothing more to send: acc is not needed
      }
      detail::reduce_from_lower(acc.data(), tmp.data(), acc.size(), op);
    }
  }
};

}  // namespace gcl
