#pragma once
// One (sender, receiver) ring of the segment: a single-producer single-consumer byte queue.
// `head` counts the bytes the sender has ever written, `tail` those the receiver has ever
// consumed; each side keeps its own counter and publishes it with a release store, the other
// reads it with an acquire load, so the bytes between them are handed over without a lock (and
// without a data race: nobody writes bytes the other may still read). A message is a header
// (shm_message) and its payload, in as many pieces as the ring has room for: a message larger
// than the ring streams through it while the receiver reads, which is the pipelined copy.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "../../call_info.hpp"

namespace gcl::detail {

// What precedes every payload in a ring: 32 bytes, so that a header and a payload of up to 32
// bytes are one cache line to write and to fetch (with the whole call_info in every header, 88
// bytes, they were two; measured, 4 B all_reduce at P = 2, processes pinned, in the host's slow
// state where a line crossing the cores costs three times as much: 0.72 of the time).
struct shm_message {
  // The message's stream position XOR the job's stamp key (shm_header::stamp_key), stored last
  // with a release store: what the receiver polls to learn that a message has come, in the
  // message's own first line, rather than the ring's head in a line of its own (a second
  // cache-line transfer before every small message). Stale bytes at that place (an older
  // message's, or payload) match it only by a chance of 2^-64: the key is random.
  std::uint64_t stamp = 0;
  std::uint32_t tg = 0;
  std::uint8_t offer = 0;      // not 0: no payload follows; the receiver copies it from `address`
  std::uint8_t rewinds = 0;    // 1: the next message starts at the ring's next lap
  std::uint8_t complete = 0;   // 1: the whole payload was written before the stamp
  std::uint8_t extended = 0;   // 1: an shm_message_extension follows, before the payload
  std::uint64_t size = 0;      // payload bytes
  std::uint64_t sequence = 0;  // of the sender's call (call_info::sequence)
};
static_assert(sizeof(shm_message) == 32);

// Follows a header whose sender's call differs from the last one it named on this ring by more
// than its sequence (the first message of a ring, a new kind of collective or size), and every
// offer's. The receiver keeps the last call named on each ring: a collective called in a loop
// names its call once, and each message after carries only the sequence.
struct shm_message_extension {
  // offer_by_address: in the sender's memory; offer_in_pool, offer_in_share: in the segment
  std::uint64_t address = 0;
  call_info call;  // the sender's call, compared by the receiver
};
static_assert(sizeof(shm_message) + sizeof(shm_message_extension) <= 128,
              "a header must never wrap around its ring");

// n rounded up to a multiple of `multiple`: the one rounding of the segment's layout.
inline constexpr std::uint64_t round_up(std::uint64_t n, std::uint64_t multiple) noexcept {
  return (n + multiple - 1) / multiple * multiple;
}

// Every message starts on a multiple of this in its ring's byte stream, and the rings, and
// their sizes, are multiples of it in the segment: two messages then never share a cache line
// (a sender writing the next message into the line its receiver has just read would first wait
// for the receiver's copy to be invalidated), and a header with its first bytes is one aligned
// pair of lines, which the core fetches together.
inline constexpr std::size_t shm_line_pair = 128;

// n rounded up to a multiple of shm_line_pair: where a message written at stream position n
// starts, and the size of a part of the segment laid out before a ring.
inline constexpr std::uint64_t round_to_line_pair(std::uint64_t n) noexcept {
  return round_up(n, shm_line_pair);
}

// A cache line of the machines gcl runs on: the unit the sender writes the line the receiver
// polls in, and the pool's blocks' alignment.
inline constexpr std::size_t shm_cache_line = 64;

// Where a message's payload starts, counted from its header's start: right after the header
// when both fit one line pair (the sender composes them and writes them together), else on the
// next cache line, so that the line the receiver polls is written once, whole, and not again by
// the payload (measured, processes pinned, 256 B all_reduce at P = 2: with the payload right
// after a 32-byte header, 1.08-1.10 of the time of the 88-byte header's layout; from the next
// line, level).
inline constexpr std::uint64_t shm_payload_offset(std::uint64_t header_bytes,
                                                  std::uint64_t payload_bytes) noexcept {
  return header_bytes + payload_bytes <= shm_line_pair ? header_bytes
                                                       : round_up(header_bytes, shm_cache_line);
}

// The stamp of the header at stream position `pos` of a ring (its first 8 bytes; `pos` is a
// multiple of shm_line_pair, so the header never wraps and the stamp is aligned).
// The receiver only loads it, through its const view of the ring.
inline std::atomic_ref<std::uint64_t> stamp_at(std::byte const* ring, std::uint64_t capacity,
                                               std::uint64_t pos) noexcept {
  auto* at = const_cast<std::byte*>(ring) + static_cast<std::size_t>(pos % capacity);
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at));
}

// shm_message::offer: a payload in the ring, or where the receiver reads it instead.
enum : std::uint8_t {
  offer_none,        // the payload follows in the ring
  offer_by_address,  // read from the sender's memory (process_vm_readv, or memcpy in-process)
  offer_in_pool,     // read from the sender's pool in the segment, mapped by every rank
  offer_in_share,    // read from the sender's share area in the segment (share_with_all)
};

// Copies n bytes into the ring at stream position `pos` (wrapping at `capacity`).
inline void ring_put(std::byte* ring, std::uint64_t capacity, std::uint64_t pos, void const* from,
                     std::size_t n) noexcept {
  if (n == 0) return;
  auto const off = static_cast<std::size_t>(pos % capacity);
  auto const first = std::min<std::size_t>(n, static_cast<std::size_t>(capacity) - off);
  auto const* src = static_cast<std::byte const*>(from);
  std::memcpy(ring + off, src, first);
  if (first < n) std::memcpy(ring, src + first, n - first);
}

// Copies n bytes out of the ring at stream position `pos`.
inline void ring_get(std::byte const* ring, std::uint64_t capacity, std::uint64_t pos, void* to,
                     std::size_t n) noexcept {
  if (n == 0) return;
  auto const off = static_cast<std::size_t>(pos % capacity);
  auto const first = std::min<std::size_t>(n, static_cast<std::size_t>(capacity) - off);
  auto* dst = static_cast<std::byte*>(to);
  std::memcpy(dst, ring + off, first);
  if (first < n) std::memcpy(dst + first, ring, n - first);
}

}  // namespace gcl::detail
