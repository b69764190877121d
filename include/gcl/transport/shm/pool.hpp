#pragma once
// A rank's pool in the segment (shm/segment.hpp): memory that this rank hands out to its user
// (shm_transport::allocate) and that every rank of the job has mapped. A large message sent
// from there is not copied through a ring: its receiver reads it where it lies, one copy at
// memcpy's speed, as between threads (doc/shm.md, "Buffers in the pool").
//
// Only the owning process allocates from its pool, so the bookkeeping is private to it (a map
// of free ranges, first fit, merged on release): nothing in the segment, nothing a peer could
// corrupt, no cross-process lock. The buffers of a job are few and long-lived (a model's
// gradients, a benchmark's message), so a first-fit map is enough.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "../../error.hpp"
#include "segment.hpp"

namespace gcl::detail {

class shm_pool {
 public:
  // Every block starts on a cache line, so that no two blocks share one.
  static constexpr std::size_t alignment = shm_cache_line;

  // `segment` stays mapped while the pool (and so any block of it) lives, after its transport.
  shm_pool(std::shared_ptr<shm_segment> segment, int rank)
      : segment_(std::move(segment)), base_(segment_->pool(rank)), bytes_(segment_->pool_bytes()) {
    if (bytes_ > 0) free_.emplace(0, bytes_);
  }

  std::size_t capacity() const noexcept { return bytes_; }
  bool contains(std::byte const* p, std::size_t n) const noexcept {
    return bytes_ > 0 && lies_within(reinterpret_cast<std::uintptr_t>(base_), bytes_,
                                     reinterpret_cast<std::uintptr_t>(p), n);
  }

  // n bytes (n > 0), 64-byte aligned; throws usage_error, naming the sizes and the fix, when
  // the pool has no free range that large.
  std::byte* allocate(std::size_t n) {
    auto const want = static_cast<std::size_t>(round_up(n, alignment));
    std::lock_guard lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < want) continue;
      auto const at = it->first;
      auto const rest = it->second - want;
      free_.erase(it);
      if (rest > 0) free_.emplace(at + want, rest);
      used_.emplace(at, want);
      in_use_ += want;
      return base_ + at;
    }
    throw usage_error(
        "gcl: shm_transport::allocate(" + std::to_string(n) + " bytes): " +
        (bytes_ == 0
             ? std::string("the job has no pool")
             : "its pool of " + std::to_string(bytes_) + " bytes has " +
                   std::to_string(bytes_ - in_use_) + " free, none of it in one piece that large") +
        "; set GCL_SHM_POOL_BYTES (or shm_options::pool_bytes) on rank 0 to at least the sum of "
        "the buffers each rank allocates");
  }

  // Gives back a block that allocate returned; anything else is ignored.
  void release(std::byte* p) noexcept {
    std::lock_guard lock(mutex_);
    auto used = used_.find(static_cast<std::size_t>(p - base_));
    if (used == used_.end()) return;
    auto at = used->first;
    auto len = used->second;
    used_.erase(used);
    in_use_ -= len;
    auto next = free_.lower_bound(at);
    if (next != free_.end() && at + len == next->first) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        prev->second += len;
        return;
      }
    }
    free_.emplace(at, len);
  }

 private:
  std::shared_ptr<shm_segment> segment_;
  std::byte* base_;
  std::size_t bytes_;
  std::mutex mutex_;
  std::map<std::size_t, std::size_t> free_;  // offset -> length, of the free ranges
  std::map<std::size_t, std::size_t> used_;  // offset -> length, of the blocks handed out
  std::size_t in_use_ = 0;
};

}  // namespace gcl::detail
