#pragma once
/// \file
/// `gcl::halving_doubling`: Rabenseifner's all_reduce. A reduce-scatter by recursive halving
/// (each step exchanges half of what is left, so messages of p/2, p/4, ..., p/P elements),
/// then an all-gather by recursive doubling (the same messages in reverse order). 2 P log2 P
/// messages in 2 log2 P rounds when P is a power of two; each rank sends 2 (P-1)/P p elements,
/// as the ring does, but in 2 log2 P rounds instead of 2 (P-1).
///
/// The vector is cut into P' blocks (`detail::chunk_layout`: the first `p mod P'` blocks one
/// element larger). Reduce-scatter step k (k = 0, 1, ..., mask 2^k) pairs survivor v with
/// v xor 2^k; the one whose bit k is 0 keeps the lower half of its current block range and
/// sends the upper half. Taking the masks in increasing order means that after step k each
/// rank's partial result covers a contiguous, aligned range of 2^(k+1) ranks and the partner
/// holds the adjacent range, so combining `op(lower, higher)` keeps rank order: the algorithm
/// accepts non-commutative operators, and each element is reduced on exactly one rank, so
/// every rank ends with bit-identical results.
///
/// Any P: the same fold as `recursive_doubling` (the first 2r ranks, r = P - P', pair up; the
/// even one sends its whole vector before and receives the result after). Exactly
/// 2 P' log2 P' + 2r messages: r of p (fold), P' log2 P' of the halves (reduce-scatter),
/// P' log2 P' of the halves (all-gather), r of p (unfold); 2 log2 P' + 2 rounds if r > 0.
/// A step that moves a range of b blocks sends the sum of those blocks' sizes (possibly 0).

#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/chunk.hpp"
#include "../detail/reduce_kernel.hpp"
#include "recursive_doubling.hpp"

namespace gcl {

/// Recursive halving then recursive doubling (see the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::halving_doubling{});
struct halving_doubling {
  static constexpr std::string_view name = "halving_doubling";
  /// Partners combine lower range first, so rank order is kept (see the file comment).
  static constexpr bool needs_commutative = false;

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    detail::pow2_fold const f(comm.size());
    if (f.size == 1) return;
    detail::chunk_layout const blocks{data.size(), f.pow2};
    // Only the fold of the ranks beyond a power of two receives into scratch: the halving steps
    // combine what they receive into `data` as it arrives (communicator::sendrecv_reduce).
    auto tmp = comm.template scratch<T>(f.extra > 0 ? data.size() : 0, 0);
    if (!detail::fold_in(comm, f, data, tmp, op)) {
      int const v = f.survivor(comm.rank());
      auto range = [&](int lo, int hi) {
        return data.subspan(blocks.offset(lo), blocks.offset(hi) - blocks.offset(lo));
      };
      // lo[k], hi[k]: the block range held before reduce-scatter step k (and after all-gather
      // step k); the all-gather retraces the halving backwards.
      int lo[32], hi[32];
      int l = 0, h = f.pow2;
      for (int k = 0; k < f.levels; ++k) {
        int const mask = 1 << k, partner = f.rank_of(v ^ mask), mid = l + (h - l) / 2;
        bool const lower = (v & mask) == 0;
        lo[k] = l;
        hi[k] = h;
        auto keep = lower ? range(l, mid) : range(mid, h);
        auto give = lower ? range(mid, h) : range(l, mid);
        // The lower rank's range stays on the left of the operator, which keeps rank order.
        comm.sendrecv_reduce(partner, std::span<T const>(give), partner, keep, op,
                             lower ? received_operand::right : received_operand::left,
                             detail::collective_tag);
        if (lower)
          h = mid;
        else
          l = mid;
      }
      for (int k = f.levels - 1; k >= 0; --k) {
        int const partner = f.rank_of(v ^ (1 << k)), mid = lo[k] + (hi[k] - lo[k]) / 2;
        bool const lower = l == lo[k];
        auto theirs = lower ? range(mid, hi[k]) : range(lo[k], mid);
        comm.sendrecv(partner, std::span<T const>(range(l, h)), partner, theirs,
                      detail::collective_tag);
        l = lo[k];
        h = hi[k];
      }
    }
    detail::fold_out(comm, f, data);
  }

  /// The critical path, one `cost_step` per round: the largest message of each step.
  template <class F>
  static void schedule(int p, std::size_t count, std::size_t element_size, F&& step) {
    detail::pow2_fold const f(p);
    std::size_t const bytes = count * element_size;
    detail::chunk_layout const blocks{count, f.pow2};
    auto const extra = static_cast<std::size_t>(f.extra), all = static_cast<std::size_t>(f.pow2);
    if (f.extra > 0) step(cost_step{1, bytes, bytes, extra});
    // Step k moves P'/2^(k+1) blocks; the largest such range is the first one.
    for (int k = 0; k < f.levels; ++k) {
      std::size_t b = blocks.offset(f.pow2 >> (k + 1)) * element_size;
      step(cost_step{1, b, b, all});
    }
    for (int k = f.levels - 1; k >= 0; --k)
      step(cost_step{1, blocks.offset(f.pow2 >> (k + 1)) * element_size, 0, all});
    if (f.extra > 0) step(cost_step{1, bytes, 0, extra});
  }
};

}  // namespace gcl
