#pragma once
// What the engine keeps per connection: the frames waiting to be written, the receive posted
// on a caller's stack, and each socket's writer and reader roles with the frame being read.
// Plain state: the rules for who may touch what are the engine's (engine.hpp), stated below
// where each field is declared.

#include "asio.hpp"

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "../../call_info.hpp"
#include "../../detail/call_progress.hpp"
#include "buffer_pool.hpp"
#include "wire.hpp"

namespace gcl::detail {

// One frame waiting to be written. A data frame lives on the sender's stack until `done`; bye
// and abort frames are owned by the queue. `sent` bytes of it (header, then payload) are out.
struct tcp_write {
  std::array<std::byte, frame_header_size> header{};
  std::span<std::byte const> payload;
  std::string owned_payload;
  std::size_t sent = 0;
  bool owned = false, shutdown_after = false, done = false;
  boost::system::error_code ec;

  std::size_t size() const noexcept { return header.size() + payload.size(); }
  // What is left to write, as (pointer, length) pairs; empty ones have length 0.
  std::array<std::pair<std::byte const*, std::size_t>, 2> rest() const noexcept {
    if (sent < header.size())
      return {{{header.data() + sent, header.size() - sent}, {payload.data(), payload.size()}}};
    auto done_payload = sent - header.size();
    return {{{payload.data() + done_payload, payload.size() - done_payload}, {nullptr, 0}}};
  }
};

// A receive waiting on the receiver's stack for the frame that fills it directly.
struct tcp_posted_recv {
  enum state_t : unsigned char { idle, posted, claimed, done, failed };
  int source;
  std::uint32_t tg;
  std::span<std::byte> in;
  call_info call;
  state_t st = idle;
};

// One connection to another rank: its socket, its writer and reader roles, the frame being read.
struct tcp_peer {
  std::optional<tcp::socket> socket;
  std::string where;  // "rank 3 at 10.0.0.3:41234"
  // Exactly one writer per socket at any time, so that frames never interleave: `writing`
  // (under tcp_impl::mutex_) is held either by the I/O thread, which then works through
  // `writes` (under mutex_ too) until it is empty, or by the caller while send() or sendrecv()
  // writes its own frame on the socket's descriptor (`caller_writes`, under mutex_ too).
  // Frames queued while the caller writes wait for it.
  std::deque<tcp_write*> writes;
  bool writing = false, caller_writes = false;
  // The descriptor the caller writes on: set while the socket is open. fd_mutex keeps the I/O
  // thread from closing it (and the number from being reused) during the caller's write.
  std::mutex fd_mutex;
  int fd = -1;
  // Reading: exactly one reader per socket at any time, as for writing. `reading` (under
  // mutex_) is held by the I/O thread when the socket becomes readable, or by the caller while
  // it waits in recv() for this peer and reads the socket itself (no thread hop on the path of
  // a message the caller is waiting for). The holder advances the frame being read through
  // `stage`; the fields below belong to the holder.
  enum class rx_stage : unsigned char {
    header,    // rx_header_got bytes of the next frame's header are in rx_header
    placing,   // rx holds a data frame's header whose payload must go somewhere now (no parking)
    payload,   // rx_received of rx.length payload bytes are in (rx_direct: in the posted receive)
    parked,    // rx is a data frame's header whose payload stays in the socket: nothing
               // reads it until the frame's receive is posted or it is drained (park_threshold)
    dropping,  // rx_received of rx.length payload bytes are read and dropped: the transport
               // has failed, nothing will take them, and the frames behind (an abort) matter
    stopped,   // ended, failed or refused: nothing more is read
  };
  rx_stage stage = rx_stage::header;
  bool reading = false;
  // Under mutex_: since when the I/O thread has held `reading` (a timeout's report says so).
  std::chrono::steady_clock::time_point io_reading_since{};
  // Under mutex_: an async_wait for readability is pending (wait_armed). `recheck`: something
  // that may need a read happened while another thread held `reading`, so the holder reads once
  // more before letting go.
  bool wait_armed = false, recheck = false;
  std::array<std::byte, frame_header_size> rx_header{};
  std::size_t rx_header_got = 0;
  frame_header rx;
  tcp_message rx_message;        // a payload being queued; rx_received of its bytes have arrived
  std::byte* rx_into = nullptr;  // with rx_direct: the posted receive's buffer
  std::size_t rx_received = 0;
  bool finished = false;   // said bye: its EOF is expected and nothing more will come
  call_info last_call;     // its last collective, as its bye says (sequence 0: none)
  bool ended = false;      // its connection is closed or failed: nothing more will come
  bool rx_direct = false;  // the payload being read goes straight into the posted receive
  rank_status status;      // its answer to the last status query
};

}  // namespace gcl::detail
