#pragma once
// The buffers of messages that arrive before their receive is posted (and of a rank's sends to
// itself), and the small pool that keeps them for reuse, so that steady back-to-back
// collectives allocate nothing. Not thread-safe: the engine uses the pool under its mutex.

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "../../call_info.hpp"

namespace gcl::detail {

// malloc'ed rather than new[]'ed so that a payload read in pieces can grow with realloc, which
// for large blocks moves pages (mremap) instead of copying bytes.
struct tcp_free {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

// A queued message: the call it belongs to and its payload.
struct tcp_message {
  call_info call;
  std::unique_ptr<std::byte, tcp_free> data;
  std::size_t size = 0, capacity = 0;  // while it arrives, capacity may be less than size
  // When it was whole here, queued for its receive: a timeout's report says how long each
  // message it found unread had been waiting (tcp_impl::unread_report).
  std::chrono::steady_clock::time_point queued{};
};

// Makes room for `capacity` bytes, keeping the bytes already there. Not zeroed: every byte is
// overwritten before it is read. Throws std::bad_alloc when memory runs out.
inline void grow(tcp_message& m, std::size_t capacity) {
  if (capacity <= m.capacity) return;
  auto* p = static_cast<std::byte*>(std::realloc(m.data.get(), capacity));
  if (p == nullptr) throw std::bad_alloc();
  (void)m.data.release();
  m.data.reset(p);
  m.capacity = capacity;
}

class tcp_buffer_pool {
 public:
  // A message of `n` bytes: a pooled buffer that holds them if there is one, else a new one.
  tcp_message take(std::size_t n) {
    tcp_message m;
    for (auto it = pool_.begin(); it != pool_.end(); ++it)
      if (it->capacity >= n) {
        m = std::move(*it);
        pool_.erase(it);
        break;
      }
    grow(m, n);
    m.size = n;
    return m;
  }

  // Keeps `m`'s buffer for a later take, unless the pool is full or the buffer is huge: enough
  // for steady-state collectives, not a hoard of large buffers.
  void give(tcp_message m) {
    if (pool_.size() < max_buffers && m.capacity <= max_kept_bytes) pool_.push_back(std::move(m));
  }

 private:
  static constexpr std::size_t max_buffers = 16;
  static constexpr std::size_t max_kept_bytes = std::size_t{64} << 20;
  std::vector<tcp_message> pool_;
};

}  // namespace gcl::detail
