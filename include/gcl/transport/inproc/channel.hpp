#pragma once
/// \file
/// The messages from one rank to another on `inproc_transport`: a single-producer,
/// single-consumer FIFO that neither side locks.
///
/// Why not a mutex-guarded queue: at a few bytes per message, the lock's cache line bouncing
/// between the two cores, and the sleep it causes when contended, cost more than the message.
/// Why not Boost.Lockfree's `spsc_queue`: it is bounded, and a sender must be able to queue any
/// number of messages (sends are eager); and the transport would then depend on Boost.
///
/// The FIFO is a linked list of cells. The sender always holds the next cell to fill, already
/// linked from the previous one, so the receiver polls a known address: the cell's first cache
/// line, which carries its state, what the receiver matches on, a small message's bytes, and
/// where a larger one's are (up to the channel's inline capacity, 4 KiB and 16 bytes in small
/// worlds, the lines after it; beyond, the channel's staging ring or a buffer it lends). A
/// message of up to 16 bytes therefore costs the receiver one cache-line transfer, the least a
/// message between two cores can cost, and a larger one only the lines of its bytes besides.
/// The receiver passes the cells it has consumed, and the sender reuses those behind the
/// receiver, with their buffers, so that a warm channel allocates nothing. The receiver may
/// consume a cell that is not the first (a message of another tag is ahead): it marks it
/// consumed, and passes it once it gets there.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "../../call_info.hpp"
#include "../../detail/demote_line.hpp"
#include "../../detail/prefetch_line.hpp"

namespace gcl::detail {

/// A 64-bit digest of a call, which a message carries in its first cache line; the receiver
/// compares it (and the sequence number) with its own call's, and reads the full `call_info`
/// only when they differ, for the error message.
inline std::uint64_t call_digest(call_info const& c) noexcept {
  // Word by word (a collective computes it twice per call, so it must cost nanoseconds):
  // every field, each read once at its own size (a wide load of narrower stores just made, or
  // of a word half rewritten, waits for them to reach the cache), mixed by multiply and shift.
  auto word = [](char const* p) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    return x;
  };
  auto half = [](char const* p) {
    std::uint32_t x;
    std::memcpy(&x, p, 4);
    return static_cast<std::uint64_t>(x);
  };
  std::uint64_t const w[7] = {
      static_cast<std::uint64_t>(c.kind) | static_cast<std::uint64_t>(c.type) << 8 |
          static_cast<std::uint64_t>(c.element_size) << 16 |
          static_cast<std::uint64_t>(static_cast<std::uint32_t>(c.root)) << 32,
      c.sequence,
      c.count,
      word(c.op),
      half(c.op + 8) | half(c.algorithm + 16) << 32,
      word(c.algorithm),
      word(c.algorithm + 8)};
  std::uint64_t h = 0x9e3779b97f4a7c15u;
  for (auto x : w) {
    h = (h ^ x) * 0xbf58476d1ce4e5b9u;
    h ^= h >> 31;
  }
  return h;
}

/// One message. The sender fills it, then publishes it (`state` leaves `empty`); from then on
/// the receiver reads it. A small message is copied into the cell; a large one is offered:
/// the receiver copies it straight from the sender's memory (one copy instead of two), unless
/// the sender, tired of waiting, withdraws the offer and copies it into the cell after all
/// (see inproc_transport).
///
/// The receiver's part starts on a 128-byte boundary, so that the first line's neighbour in
/// its 128-byte pair is the second: the core's adjacent-line prefetcher fetches the pair
/// together, and a message of 17 to 80 bytes then costs the receiver one transfer's wait
/// instead of two. Measured at P = 2, all_reduce back to back, eight rounds interleaved
/// (medians of up to 20,000 calls): 64 B 0.22-0.25 us against 0.27-0.28 aligned to 64, 16 B
/// 0.20-0.22 against 0.22-0.23, 256 B and 1 KiB level, 16 and 64 KiB 1-2% slower (within the
/// rounds' spread).
///
/// A cell is allocated with room for its channel's `inline_capacity` bytes (inproc_channel::
/// make_cell): the first 80 in the cell, the rest right after it. So the sender's part comes
/// first, and a message's bytes follow its first line without a gap, whatever their number.
struct alignas(128) inproc_cell {
  enum state_t : std::uint8_t {
    empty,        ///< not published yet: the receiver polls for the change
    ready,        ///< the bytes are at `bytes`: `data()`, the cell's own
    offered,      ///< the bytes are at `bytes`, in the sender's memory
    copying,      ///< the receiver is copying from `bytes`
    withdrawing,  ///< the sender is copying its bytes into `data()`; then `ready`
    taken,        ///< the receiver has copied the offered bytes: the sender may go on
  };
  /// Inline bytes within the cell itself: 16 in the first line of the receiver's part, 64 in
  /// the second.
  static constexpr std::size_t bytes_in_cell = 16 + 64;

  // The sender's part, in lines the receiver reads only when a call disagrees (`call`), or
  // never. The call in full, which the receiver reads when the digests differ.
  call_info call;
  // Room for a message too large for the cell (lent by the channel), and the cell after this
  // one in the sender's list of every cell (`next` also says it, but reading it there would
  // wait for the line the receiver has just read).
  struct buffer_t {
    std::unique_ptr<std::byte[]> bytes;
    std::size_t capacity = 0;
  } buffer;
  inproc_cell* chain = nullptr;
  // Where the bytes of a message copied into the channel's staging ring end there (a count of
  // every byte ever staged), 0 when they are not in the ring: the sender's, freed when the
  // receiver has passed the cell.
  std::uint64_t staged_end = 0;
  std::size_t inline_capacity = bytes_in_cell;  // bytes a message may have in the cell

  // The receiver's part. First line: everything the receiver reads of a small message, and
  // nothing else.
  alignas(128) std::atomic<state_t> state{empty};
  bool consumed = false;  // the receiver's: read out of order, passed when it gets there
  call_kind kind = call_kind::point_to_point;
  tag tg{};
  inproc_cell* next = nullptr;  // set before publishing: the cell of the next message
  std::size_t size = 0;
  // Where the message's bytes are, in this first line so that the receiver does not first miss
  // on a line of the sender's part to learn where to read: the sender's memory for an offer,
  // else `data()`.
  std::byte const* bytes = nullptr;
  std::uint64_t sequence = 0;  // of the call it belongs to
  std::uint64_t digest = 0;    // call_digest of that call
  // The first of the inline bytes: 16 in this line, 64 in the next; the rest follow the cell.
  std::byte inline_head[bytes_in_cell];

  /// Where a message's bytes go in the cell: `inline_capacity` bytes from the first line's last
  /// 16 on. Computed from the cell's own address, as they run past `inline_head` into the room
  /// make_cell allocated after the cell.
  std::byte* inline_bytes() noexcept;
  /// Where a message of `n` bytes goes, copied into the channel: the cell, or its lent buffer
  /// (`inproc_channel::next(n)` lends one to a message that does not fit the cell).
  std::byte* room_for(std::size_t n) noexcept {
    return n <= inline_capacity ? inline_bytes() : buffer.bytes.get();
  }
  /// Where a ready message's `size` bytes are.
  std::byte* data() noexcept { return room_for(size); }
};

static_assert(offsetof(inproc_cell, state) == 128 && offsetof(inproc_cell, inline_head) == 176,
              "the receiver's part starts a line pair, and its first line ends in 16 bytes");
static_assert(sizeof(inproc_cell) == 256, "the inline bytes beyond the cell follow it at once");

// Where the inline bytes start in a cell, a constant: Clang warns of offsetof on a class that
// is not standard-layout (to Clang, std::unique_ptr is not) where it is evaluated at run time.
inline constexpr std::size_t inproc_cell_inline_offset = offsetof(inproc_cell, inline_head);

inline std::byte* inproc_cell::inline_bytes() noexcept {
  return reinterpret_cast<std::byte*>(this) + inproc_cell_inline_offset;
}

class inproc_channel {
 public:
  /// `batch`: how many cells to add when the sender runs out (see reusable());
  /// `inline_capacity`: the bytes a message may have in its cell (at least
  /// `inproc_cell::bytes_in_cell`); `ring_bytes`: the size of the staging ring (see stage()),
  /// allocated with the first message staged; `demote`: publish() moves the line the receiver
  /// polls out of the sender's core (where the receiver runs on another: see publish()).
  inproc_channel(std::size_t batch, std::size_t inline_capacity, std::size_t ring_bytes,
                 bool demote = false)
      : batch_(batch),
        inline_capacity_(std::max(inline_capacity, inproc_cell::bytes_in_cell)),
        ring_bytes_(ring_bytes),
        demote_(demote) {
    front_.store(make_cell(), std::memory_order_relaxed);
    oldest_ = next_ = seen_front_ = front_.load(std::memory_order_relaxed);
  }
  inproc_channel(inproc_channel const&) = delete;
  inproc_channel& operator=(inproc_channel const&) = delete;
  ~inproc_channel() {
    for (inproc_cell* c = oldest_; c != nullptr;) destroy(std::exchange(c, c->chain));
    if (prepared_ != nullptr) destroy(prepared_);
  }

  // ---- the sender's ----

  /// The cell the next message goes in (the receiver already knows where it is), with room
  /// for `bytes` (in the cell, or a buffer the channel lends it).
  inproc_cell& next(std::size_t bytes) {
    if (bytes > inline_capacity_) lend(*next_, bytes);
    return *next_;
  }

  /// Room for the `bytes` of the next message in the channel's staging ring, or null when the
  /// ring has none now, or the message is larger than a quarter of it (then the cell's own
  /// room, or its lent buffer: `next(bytes)`).
  ///
  /// Why a ring: a message copied into the channel is copied out by the receiver, so the lines
  /// it lands in are then in the receiver's cache too, and a sender that writes them again
  /// first waits for the receiver's copies to be invalidated, line by line, a round trip
  /// between the cores each. A lent buffer is reused at once (the most recently returned
  /// one), so every message paid that; the ring's bytes are written again only after a ring's
  /// worth of messages, by when the receiver's cache has let them go. Measured on 2 cores
  /// (two threads exchanging 128 KiB through k slots in turn, /tmp program): 19-22 us per
  /// exchange with one slot, 16-18 with four (512 KiB), 9 with eight (1 MiB, a core's second
  /// level cache here), 6.9 with 32.
  std::byte* stage(std::size_t bytes) {
    if (bytes == 0 || bytes > ring_bytes_ / 4) return nullptr;
    // Zeroed: its pages are mapped now, not by the first pass of messages through it (a page
    // fault each 4 KiB, more than a small message costs).
    if (!ring_) ring_.reset(new std::byte[ring_bytes_]());
    auto start = ring_head_;
    auto const offset = start % ring_bytes_;
    if (offset + bytes > ring_bytes_) start += ring_bytes_ - offset;  // contiguous: skip the end
    auto const end = start + bytes;
    if (end - ring_tail_ > ring_bytes_) {
      free_passed();
      if (end - ring_tail_ > ring_bytes_) return nullptr;
    }
    ring_head_ = end;
    next_->staged_end = end;
    return ring_.get() + start % ring_bytes_;
  }

  /// Hands `next()`, filled, to the receiver, with `state` (ready or offered). May throw
  /// (allocating the cell after it) before anything is published.
  ///
  /// The cell after it must be empty before the receiver can reach it, so it is emptied one
  /// message ahead: after this message is out, not before. Emptying a cell writes a line the
  /// receiver read (a batch of cells ago), and a store waits for the receiver's copy to be
  /// invalidated; before the publishing store, which x86 makes visible only after every store
  /// before it, that wait was on the path of every message. Measured on 2 cores, P = 2,
  /// all_reduce back to back, five rounds of each build alternated: 4 B 0.38-0.40 us against
  /// 0.48-0.53, 256 B 0.48-0.55 against 0.60-0.62, 1 KiB 0.79-0.82 against 0.88-0.95, 16 KiB
  /// 5.4-5.6 against 5.7-5.8; at P = 4 and 8 level (the jobs fall in the same two modes). An
  /// earlier try lost at 512 B and 1 KiB, then in lent buffers (benchmark/analysis.md).
  ///
  /// With `demotes()`, the line the receiver polls is then sent on to the shared cache
  /// (detail/demote_line.hpp), where the receiver's next look finds it, instead of fetching it
  /// from this core. Measured on 2 cores (Emerald Rapids), P = 2, all_reduce back to back,
  /// builds alternated, medians of four and of six rounds: 4 B 0.44 and 0.45 us against 0.48
  /// and 0.47, 1 KiB 0.78 and 0.84 against 0.83 and 0.87, 4 KiB to 256 KiB 0.96-0.99 of the
  /// time.
  void publish(inproc_cell::state_t state) {
    inproc_cell* after = prepared_ != nullptr ? std::exchange(prepared_, nullptr) : reusable();
    inproc_cell* c = std::exchange(next_, after);
    c->next = c->chain = after;
    c->state.store(state, std::memory_order_release);
    if (demote_) demote_line(&c->state);
    try {
      prepared_ = reusable();
    } catch (std::bad_alloc const&) {  // nothing lost: the next publish allocates, or throws
    }
  }

  // ---- the receiver's ----

  /// Whether publish() demotes the line the receiver polls.
  bool demotes() const noexcept { return demote_; }

  /// The first message not yet passed (it may be consumed), or null.
  inproc_cell* first() const noexcept { return published(front_.load(std::memory_order_relaxed)); }
  /// The message after `c`, or null.
  static inproc_cell* after(inproc_cell const* c) noexcept { return published(c->next); }

  /// The receiver is done with `c`: if it is the first, the front passes it (and every
  /// consumed cell after it), so the sender may reuse them; otherwise it is marked consumed.
  ///
  /// The cells after the first are read only when some were consumed out of order: the cell
  /// after the last message is the one its sender emptied for the next, a line in the sender's
  /// core, and reading it to learn that it is not consumed stalled the receiver on a cache miss
  /// at every message. Its line is prefetched instead (the read without the stall): the next
  /// message goes there, and without that early look the messages above the first line's 16
  /// bytes took longer. Measured at P = 2, all_reduce back to back between two threads bound
  /// to the two cores, medians of 20,000 calls, four runs of each build interleaved, on the
  /// AMD EPYC host of 2026-12-05 in both of its states (a cache line's round trip between the
  /// cores 445 ns, then 100 ns), against reading the cell: 4 B 0.48-0.54 us against 0.60-0.67,
  /// and 0.21-0.23 against 0.23-0.25; 32 B to 512 B 0.60-0.70 against 0.60-0.77, and 0.24-0.28
  /// against 0.24-0.29. Neither reading the cell nor prefetching it: 4 B 0.53-0.57 and
  /// 0.18-0.21, but 32 B to 512 B 0.74-0.81 and 0.25-0.29.
  void consume(inproc_cell& c) {
    inproc_cell* f = front_.load(std::memory_order_relaxed);
    if (f != &c) {
      c.consumed = true;
      ++consumed_ahead_;
      return;
    }
    f = f->next;
    prefetch_line(&f->state);
    while (consumed_ahead_ > 0 && f->consumed &&
           f->state.load(std::memory_order_acquire) != inproc_cell::empty) {
      --consumed_ahead_;
      f = f->next;
    }
    front_.store(f, std::memory_order_release);
  }

 private:
  // A cell with room for inline_capacity_ bytes: the cell, then what does not fit in it.
  inproc_cell* make_cell() {
    auto const beyond = inline_capacity_ - inproc_cell::bytes_in_cell;
    void* room =
        ::operator new (sizeof(inproc_cell) + beyond, std::align_val_t{alignof(inproc_cell)});
    auto* c = new (room) inproc_cell;
    c->inline_capacity = inline_capacity_;
    return c;
  }
  static void destroy(inproc_cell* c) noexcept {
    c->~inproc_cell();
    ::operator delete (c, std::align_val_t{alignof(inproc_cell)});
  }

  static inproc_cell* published(inproc_cell* c) noexcept {
    return c->state.load(std::memory_order_acquire) == inproc_cell::empty ? nullptr : c;
  }

  // A cell for a message to come: the oldest the receiver has passed, or a new one. The cells
  // go round in FIFO order, so there are as many as the sender has ever been ahead of its
  // receiver, plus three. How far ahead a sender can get is a property of the algorithm
  // and the world size (up to P messages in a ring, where a rank runs ahead while its left
  // neighbour is descheduled), not of the number of messages: so a warm channel does not
  // allocate whatever the scheduler does.
  //
  // Cells come `batch_` at a time, the first batch with the channel's first message, and many
  // more than a sender is usually ahead: the sender learns which cells the receiver has passed
  // by reading `front_`, a cache miss (the receiver writes it at every message) next to a
  // message's publishing, so it should read it once per many messages, not once per few.
  // Measured at P = 2, 4 B all_reduce back to back: with batches of 4 cells, a call took
  // 0.26-0.29 us (the slowest rank's median); with 32, 0.24. (A cell is 256 bytes and its
  // room for inline bytes, whose pages are touched only by messages that fill them.)
  inproc_cell* reusable() {
    if (oldest_ == seen_front_) seen_front_ = front_.load(std::memory_order_acquire);
    if (oldest_ == seen_front_) {
      for (std::size_t i = 0; i < batch_; ++i) {
        auto* fresh = make_cell();
        fresh->chain = oldest_;  // behind the front: only the sender looks there
        oldest_ = fresh;
      }
    }
    inproc_cell* c = std::exchange(oldest_, oldest_->chain);
    c->state.store(inproc_cell::empty, std::memory_order_relaxed);
    c->consumed = false;
    c->next = c->chain = nullptr;
    free_staged(*c);
    if (c->buffer.bytes)  // spare_ has room for every buffer
      spare_.push_back(std::exchange(c->buffer, inproc_cell::buffer_t{}));
    return c;
  }

  // The ring's bytes of a cell the receiver has passed are free again. Cells are passed, and
  // reused, in the order their messages were staged, so the ring's tail only moves forward.
  void free_staged(inproc_cell& c) noexcept {
    if (c.staged_end == 0) return;
    ring_tail_ = c.staged_end;
    c.staged_end = 0;
  }
  // Frees the ring's bytes of every cell the receiver has passed.
  void free_passed() noexcept {
    seen_front_ = front_.load(std::memory_order_acquire);
    for (inproc_cell* passed = oldest_; passed != seen_front_; passed = passed->chain)
      free_staged(*passed);
  }

  // Gives `c` a buffer of at least `bytes`: a spare one (buffers go round between the cells,
  // so there are as many as messages have ever waited at once), grown if it is too small, or
  // new ones. How many messages wait at once depends on the scheduler, so when the buffers run
  // out their number doubles (the new ones the size of this one): a warm channel allocates
  // again only if its backlog doubles. Each grows by an eighth more than asked: the chunks of
  // one collective differ by an element, and a buffer should grow once for them, not once per
  // chunk size. Default-initialised: no zeroing of what will be overwritten, and pages that
  // are never written are never touched.
  void lend(inproc_cell& c, std::size_t bytes) {
    if (c.buffer.capacity >= bytes) return;
    std::size_t const grown = bytes + bytes / 8;
    if (!c.buffer.bytes && spare_.empty()) {
      // The buffers of the messages the receiver has read, whose cells are not reused yet.
      seen_front_ = front_.load(std::memory_order_acquire);
      for (inproc_cell* passed = oldest_; passed != seen_front_; passed = passed->chain)
        if (passed->buffer.bytes)
          spare_.push_back(std::exchange(passed->buffer, inproc_cell::buffer_t{}));
      if (spare_.empty()) {
        std::size_t const more = std::max<std::size_t>(buffers_, 1);
        spare_.reserve(buffers_ += more);  // room for every buffer: returning one never allocates
        for (std::size_t i = 0; i < more; ++i)
          spare_.push_back({std::unique_ptr<std::byte[]>(new std::byte[grown]), grown});
      }
    }
    if (!c.buffer.bytes) {
      c.buffer = std::exchange(spare_.back(), inproc_cell::buffer_t{});
      spare_.pop_back();
      if (c.buffer.capacity >= bytes) return;
    }
    c.buffer.bytes.reset(new std::byte[grown]);
    c.buffer.capacity = grown;
  }

  // The receiver's: the first cell not passed (published or not). Its own cache line: the
  // sender reads it only when it runs out of cells to reuse.
  alignas(64) std::atomic<inproc_cell*> front_;
  // The receiver's: cells after the front that it has consumed out of order (see consume()).
  std::size_t consumed_ahead_ = 0;
  // The sender's: every cell, oldest (reusable once behind the front) to next (to fill).
  alignas(64) inproc_cell* oldest_;
  inproc_cell* next_;
  inproc_cell* prepared_ = nullptr;           // emptied, to follow next_ (see publish())
  inproc_cell* seen_front_;                   // the front as the sender last read it
  std::vector<inproc_cell::buffer_t> spare_;  // buffers of the cells the receiver has passed
  std::size_t buffers_ = 0;                   // lent or spare
  std::size_t batch_;
  std::size_t inline_capacity_;
  // The staging ring (the sender's): bytes [ring_tail_, ring_head_) of the stream of every
  // byte ever staged are in messages the receiver has not passed.
  std::size_t ring_bytes_;
  std::unique_ptr<std::byte[]> ring_;
  std::uint64_t ring_head_ = 0;
  std::uint64_t ring_tail_ = 0;
  bool demote_;  // see publish()
};

}  // namespace gcl::detail
