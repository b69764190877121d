#pragma once
/// \file
/// `gcl::ring`: ring algorithms. all_reduce is a scatter-reduce then an all-gather: at step i
/// (from 1) worker n sends chunk `(n + i - 2) mod P` to its left neighbour `n - 1` and receives
/// from its right neighbour `n + 1` (doc/algorithms.md works the schedule through). `2 (P - 1)`
/// steps, each moving about `count / P` elements per rank: the right choice for large messages
/// (bandwidth bound).

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/chunk.hpp"
#include "../detail/reduce_kernel.hpp"

namespace gcl {

namespace detail {

/// The chunk worker `n` of `p` sends at step `i` (1-based) of a ring that sends chunk
/// `(n + first) mod p` at step 1 and then forwards what it last received. all_reduce uses
/// `first = -1` (chunk `(n - 1) mod p` at step 1), for all `2 (p - 1)` steps.
constexpr int ring_send_chunk(int n, int i, int p, int first) noexcept {
  return mod(n + first + i - 1, p);
}
/// The chunk worker `n` receives at step `i`: what its right neighbour sends.
constexpr int ring_recv_chunk(int n, int i, int p, int first) noexcept {
  return ring_send_chunk(mod(n + 1, p), i, p, first);
}

}  // namespace detail

/// Ring: all_reduce (scatter-reduce, then all-gather), reduce_scatter, all_gather. Every rank
/// sends `2 (P - 1)` messages of one chunk (`count / P` elements, the first `count % P` chunks one
/// larger, possibly empty) for all_reduce. Combines chunks in a different operand order on each
/// rank, so it needs a commutative operator.
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{.segment_bytes = 1 << 16});  // pipelined
struct ring {
  static constexpr std::string_view name = "ring";
  /// Each chunk's reduction starts at a different rank, so operand order differs per chunk.
  static constexpr bool needs_commutative = true;

  /// all_reduce only: 0 sends each chunk as one message. Otherwise each chunk travels as
  /// segments of at most this many bytes (at least one element), and a rank reduces segment
  /// j while segment j + 1 is arriving (posted with irecv), overlapping reduction and
  /// transfer. Same result bit for bit (the same operands meet in the same order). Every chunk
  /// is at least one message, so a chunk of c elements is max(1, ceil(c / s)) messages for
  /// s = max(1, segment_bytes / sizeof(T)); when segment_bytes >= the largest chunk the
  /// messages are exactly those of the unsegmented ring.
  std::size_t segment_bytes = 0;

  /// all_reduce only: 0 all-reduces the whole buffer at once. Otherwise a buffer of more than
  /// this many bytes is all-reduced a block at a time (`blocks` of them, as equal as whole
  /// elements allow, none larger than this), each block a whole ring all_reduce before the
  /// next starts. Then what a rank reduces in a block's scatter-reduce is still in its cache
  /// when the all-gather sends it on, and a chunk received into scratch is read back from the
  /// cache: a large message crosses main memory about once each way, where the whole buffer
  /// at once writes and rereads every chunk there. `by_size` runs ring with blocks from the
  /// transport's `all_reduce_thresholds` (2 MiB per rank unless it says otherwise). 2 (P - 1)
  /// messages per block; each element meets the same operands as in its block's own ring.
  std::size_t block_bytes = 0;

  /// How many blocks `count` elements of `element_size` bytes are all-reduced in (1: at once).
  constexpr std::size_t blocks(std::size_t count, std::size_t element_size) const noexcept {
    if (block_bytes == 0 || count * element_size <= block_bytes) return 1;
    std::size_t const per = std::max<std::size_t>(block_bytes / element_size, 1);
    return (count + per - 1) / per;
  }

  /// Scatter-reduce then all-gather, in place (block by block, with `block_bytes`). Empty
  /// chunks are still sent (as empty messages), so every rank sends exactly `2 (P - 1)`
  /// messages per block whatever the count.
  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    int const p = comm.size(), n = comm.rank();
    if (p == 1) return;
    if (std::size_t const k = blocks(data.size(), sizeof(T)); k > 1) {
      ring whole = *this;
      whole.block_bytes = 0;
      for_each_block(data.size(), k, [&](std::size_t at, std::size_t len) {
        whole.all_reduce(comm, data.subspan(at, len), op);
      });
      return;
    }
    detail::chunk_layout const chunks{data.size(), p};
    if (segment_bytes != 0 && segment_elements<T>() < chunks.max_size())
      return segmented_all_reduce(comm, data, op, chunks);
    int const left = detail::mod(n - 1, p), right = detail::mod(n + 1, p);
    auto chunk = [&](int c) { return data.subspan(chunks.offset(c), chunks.size(c)); };
    constexpr int first = -1;  // step 1 sends chunk (n - 1) mod p (doc/algorithms.md)
    bool forwarded = false;
    if constexpr (Comm::forwards_reduced) {
      // Phase I, the same messages in the same order: what a step receives and combines is
      // what the next step sends, so it goes straight into that message as it is combined
      // (communicator::reduce_and_forward; shm), and is never written here: each partial chunk
      // is written once, where combining it into ours and sending that wrote it twice. Not
      // where the first send would be an offer (shm: `data` in its pool), which returns only
      // once it is read: every rank would wait in it for a rank waiting in its own, and each
      // copies the other's offer aside only after polling in vain (P = 2, 1 MiB: 4-5x the
      // time). Either way the messages are the same, so each rank chooses for itself.
      auto const opening = std::span<T const>(chunk(detail::ring_send_chunk(n, 1, p, first)));
      if (!comm.offers(left, opening)) {
        comm.send(left, opening, detail::collective_tag);
        for (int i = 1; i < p - 1; ++i)
          comm.reduce_and_forward(right, chunk(detail::ring_recv_chunk(n, i, p, first)), left, op,
                                  received_operand::right, detail::collective_tag);
        comm.recv_reduce(right, chunk(detail::ring_recv_chunk(n, p - 1, p, first)), op,
                         received_operand::right, detail::collective_tag);
        forwarded = true;
      }
    }
    if (!forwarded) {
      for (int i = 1; i <= p - 1; ++i) {  // phase I: scatter-reduce
        // The chunk received is combined into ours as it arrives, where the transport can
        // (communicator::sendrecv_reduce): no scratch copy of it goes through memory.
        comm.sendrecv_reduce(left,
                             std::span<T const>(chunk(detail::ring_send_chunk(n, i, p, first))),
                             right, chunk(detail::ring_recv_chunk(n, i, p, first)), op,
                             received_operand::right, detail::collective_tag);
      }
    }
    // Now chunk (n - 2) mod p is final here. Phase II forwards final chunks: same schedule.
    // Where the transport stages a message once for every peer (shm), each rank sends its
    // final chunk to all in one round instead: one copy into its share area and one out per
    // peer, where forwarding through the rings copies each chunk in and out at every hop
    // (measured: shm/engine.hpp, share_with_all). At P = 2 the two are one message.
    if (p > 2 && comm.share_with_all(
                     std::span<T const>(chunk(detail::mod(n - 2, p))),
                     [&](int r) { return chunk(detail::mod(r - 2, p)); }, detail::collective_tag))
      return;
    for (int i = p; i <= 2 * (p - 1); ++i)
      comm.sendrecv(left, std::span<T const>(chunk(detail::ring_send_chunk(n, i, p, first))), right,
                    chunk(detail::ring_recv_chunk(n, i, p, first)), detail::collective_tag);
  }

  /// The all_reduce critical path, one `cost_step` per round (see cost_model.hpp): P - 1
  /// rounds of the largest chunk with its reduction, then P - 1 without; every rank is busy
  /// in every round.
  template <class F>
  void schedule(int p, std::size_t count, std::size_t element_size, F&& step) const {
    if (p <= 1) return;
    if (std::size_t const k = blocks(count, element_size); k > 1) {
      ring whole = *this;
      whole.block_bytes = 0;
      for_each_block(count, k, [&](std::size_t, std::size_t len) {
        whole.schedule(p, len, element_size, step);
      });
      return;
    }
    std::size_t const chunk_elements = detail::chunk_layout{count, p}.max_size();
    std::size_t const chunk = chunk_elements * element_size, all = static_cast<std::size_t>(p);
    std::size_t const s = std::max<std::size_t>(segment_bytes / element_size, 1);
    if (segment_bytes == 0 || s >= chunk_elements) {
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

  /// Elements per segment: `segment_bytes / sizeof(T)`, at least 1.
  template <class T>
  constexpr std::size_t segment_elements() const noexcept {
    return std::max<std::size_t>(segment_bytes / sizeof(T), 1);
  }

  /// Rank r gets chunk r (see `detail::chunk_layout`) of the reduction of every rank's `in`;
  /// `in` is left unchanged. Step i sends the partial chunk `(n + i) mod P`, so that the last
  /// chunk to arrive at rank n is chunk n.
  template <class Comm, class T, class Op>
  void reduce_scatter(Comm& comm, std::span<T const> in, std::span<T> out, Op const& op) const {
    int const p = comm.size(), n = comm.rank();
    detail::chunk_layout const chunks{in.size(), p};
    auto chunk = [&](int c) { return in.subspan(chunks.offset(c), chunks.size(c)); };
    if (p == 1) {
      std::copy(in.begin(), in.end(), out.begin());
      return;
    }
    int const left = detail::mod(n - 1, p), right = detail::mod(n + 1, p);
    auto got = comm.template scratch<T>(chunks.max_size(), 0);
    auto acc = comm.template scratch<T>(chunks.max_size(), 1);
    constexpr int first = 1;
    std::span<T const> send = chunk(detail::ring_send_chunk(n, 1, p, first));
    for (int i = 1; i <= p - 1; ++i) {
      int const c = detail::ring_recv_chunk(n, i, p, first);
      auto g = got.first(chunks.size(c));
      comm.sendrecv(left, send, right, g, detail::collective_tag);
      // Mine on the left; `acc` is free again because sends are eager.
      auto dst = i == p - 1 ? out : acc.first(g.size());
      detail::reduce_to(dst.data(), chunk(c).data(), g.data(), g.size(), op);
      send = dst;
    }
  }

  /// Block r of every rank's `out` (P n elements) is rank r's `in` (n elements). Step i sends
  /// block `(n + i - 1) mod P`, starting with our own.
  template <class Comm, class T>
  void all_gather(Comm& comm, std::span<T const> in, std::span<T> out) const {
    int const p = comm.size(), n = comm.rank();
    std::size_t const b = in.size();
    auto block = [&](int r) { return out.subspan(static_cast<std::size_t>(r) * b, b); };
    if (in.data() != block(n).data()) std::copy(in.begin(), in.end(), block(n).begin());
    int const left = detail::mod(n - 1, p), right = detail::mod(n + 1, p);
    for (int i = 1; i <= p - 1; ++i)
      comm.sendrecv(left, std::span<T const>(block(detail::ring_send_chunk(n, i, p, 0))), right,
                    block(detail::ring_recv_chunk(n, i, p, 0)), detail::collective_tag);
  }

 private:
  // Calls f(offset, length) for each of k blocks of `count` elements, in order: the first
  // `count % k` blocks one element longer than the rest.
  template <class F>
  static void for_each_block(std::size_t count, std::size_t k, F&& f) {
    std::size_t const base = count / k, longer = count % k;
    for (std::size_t b = 0, at = 0; b < k; ++b) {
      std::size_t const len = base + (b < longer ? 1 : 0);
      f(at, len);
      at += len;
    }
  }

  // The same schedule as all_reduce, each chunk cut into segments. In phase I a rank posts
  // receives for the first `window` segments (irecv, each into its own slot of scratch), sends
  // all of its segments, then waits for segment j, reposts the slot for segment j + window and
  // reduces j while later segments are still arriving: reduction overlaps transfer. Sends come
  // before any receive completes, as in the plain ring, so the step's sends never wait for (or
  // depend on) this step's data; sends are eager, so this cannot deadlock. FIFO per (peer, tag)
  // and the order of posting keep segment j paired with receive j.
  template <class Comm, class T, class Op>
  void segmented_all_reduce(Comm& comm, std::span<T> data, Op const& op,
                            detail::chunk_layout const& chunks) const {
    int const p = comm.size(), n = comm.rank();
    int const left = detail::mod(n - 1, p), right = detail::mod(n + 1, p);
    std::size_t const s = segment_elements<T>();
    auto chunk = [&](int c) { return data.subspan(chunks.offset(c), chunks.size(c)); };
    auto segments = [s](std::span<T> c) { return c.empty() ? 1 : (c.size() + s - 1) / s; };
    auto segment = [s](std::span<T> c, std::size_t j) {
      std::size_t const at = std::min(j * s, c.size());
      return c.subspan(at, std::min(s, c.size() - at));
    };
    constexpr std::size_t max_window = 8;
    std::size_t const window = std::min(max_window, (chunks.max_size() + s - 1) / s);
    auto slots = comm.template scratch<T>(window * s, 0);
    std::array<typename Comm::request, max_window> pending;
    constexpr int first = -1;
    for (int i = 1; i <= p - 1; ++i) {  // phase I: scatter-reduce, pipelined
      auto out = chunk(detail::ring_send_chunk(n, i, p, first));
      auto in = chunk(detail::ring_recv_chunk(n, i, p, first));
      std::size_t const ns = segments(out), nr = segments(in);
      auto slot = [&](std::size_t j) {
        return slots.subspan((j % window) * s, segment(in, j).size());
      };
      auto post = [&](std::size_t j) {
        auto buf = slot(j);
        pending[j % window] = comm.irecv(right, buf, detail::collective_tag);
      };
      for (std::size_t j = 0; j < std::min(nr, window); ++j) post(j);
      for (std::size_t j = 0; j < ns; ++j)
        comm.send(left, std::span<T const>(segment(out, j)), detail::collective_tag);
      for (std::size_t j = 0; j < nr; ++j) {
        pending[j % window].wait();
        auto dst = segment(in, j);
        detail::reduce_into(dst.data(), slot(j).data(), dst.size(), op);
        if (j + window < nr) post(j + window);  // the slot of j is free again
      }
    }
    for (int i = p; i <= 2 * (p - 1); ++i) {  // phase II: forward final segments
      auto out = chunk(detail::ring_send_chunk(n, i, p, first));
      auto in = chunk(detail::ring_recv_chunk(n, i, p, first));
      for (std::size_t j = 0; j < segments(out); ++j)
        comm.send(left, std::span<T const>(segment(out, j)), detail::collective_tag);
      for (std::size_t j = 0; j < segments(in); ++j)
        comm.recv(right, segment(in, j), detail::collective_tag);
    }
  }
};

}  // namespace gcl
