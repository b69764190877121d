#pragma once
// The bytes tcp_transport puts on the wire: the frame header in front of every message, the
// hello a connecting rank sends, the reply to it, and rank 0's address table. Fixed sizes so a
// reader always knows how much to read next; fields are copied one by one (no struct
// punning) so the layout does not depend on the compiler. Byte order is the host's: a peer of
// the other byte order shows up as a wrong magic, which is reported as such.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "../call_info.hpp"

namespace gcl::detail {

inline constexpr std::uint32_t frame_magic = 0x314c4347;  // "GCL1"
inline constexpr std::uint32_t hello_magic = 0x484c4347;  // "GCLH"
inline constexpr std::uint32_t reply_magic = 0x524c4347;  // "GCLR"
inline constexpr std::uint16_t wire_version = 2;

// status_query asks a rank's I/O thread where its rank is; status_reply answers with the
// rank's last collective in `call`, and in `tag` bit 0 "still inside it" and bits 1.. the rank
// it waits for plus one (0: none). Both carry no payload. A stopped process cannot answer.
enum class frame_type : std::uint8_t {
  data = 1,
  bye = 2,
  abort = 3,
  status_query = 4,
  status_reply = 5
};

inline constexpr std::size_t frame_header_size = 80;
inline constexpr std::size_t hello_size = 64;
inline constexpr std::size_t reply_size = 128;
inline constexpr std::size_t table_entry_size = 24;

template <class T>
void put(std::byte* at, T v) noexcept {
  std::memcpy(at, &v, sizeof v);
}
template <class T>
T get(std::byte const* at) noexcept {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

struct frame_header {
  std::uint32_t magic = frame_magic;
  std::uint16_t version = wire_version;
  frame_type type = frame_type::data;
  std::uint32_t tag = 0;  // for abort frames: the errc
  std::int32_t source = 0;
  call_info call;
  std::uint64_t length = 0;

  void encode(std::byte* b) const noexcept {
    put(b + 0, magic);
    put(b + 4, version);
    put(b + 6, static_cast<std::uint8_t>(type));
    put(b + 7, std::uint8_t{0});
    put(b + 8, tag);
    put(b + 12, source);
    put(b + 16, static_cast<std::uint8_t>(call.kind));
    put(b + 17, static_cast<std::uint8_t>(call.type));
    put(b + 18, call.element_size);
    put(b + 20, call.root);
    put(b + 24, call.sequence);
    put(b + 32, call.count);
    std::memcpy(b + 40, call.op, sizeof call.op);
    std::memcpy(b + 52, call.algorithm, sizeof call.algorithm);
    put(b + 72, length);
  }
  static frame_header decode(std::byte const* b) noexcept {
    frame_header h;
    h.magic = get<std::uint32_t>(b + 0);
    h.version = get<std::uint16_t>(b + 4);
    h.type = static_cast<frame_type>(get<std::uint8_t>(b + 6));
    h.tag = get<std::uint32_t>(b + 8);
    h.source = get<std::int32_t>(b + 12);
    h.call.kind = static_cast<call_kind>(get<std::uint8_t>(b + 16));
    h.call.type = static_cast<dtype>(get<std::uint8_t>(b + 17));
    h.call.element_size = get<std::uint16_t>(b + 18);
    h.call.root = get<std::int32_t>(b + 20);
    h.call.sequence = get<std::uint64_t>(b + 24);
    h.call.count = get<std::uint64_t>(b + 32);
    std::memcpy(h.call.op, b + 40, sizeof h.call.op);
    std::memcpy(h.call.algorithm, b + 52, sizeof h.call.algorithm);
    h.call.op[sizeof h.call.op - 1] = '\0';  // a corrupt peer must not make describe() overrun
    h.call.algorithm[sizeof h.call.algorithm - 1] = '\0';
    if (static_cast<unsigned>(h.call.kind) > static_cast<unsigned>(call_kind::calibrate))
      h.call.kind = call_kind::point_to_point;
    if (static_cast<unsigned>(h.call.type) > static_cast<unsigned>(dtype::other))
      h.call.type = dtype::other;
    h.length = get<std::uint64_t>(b + 72);
    return h;
  }
};

enum class hello_kind : std::uint8_t { join = 1, peer = 2 };  // join: register with rank 0

struct hello {
  std::uint32_t magic = hello_magic;
  std::uint16_t version = wire_version;
  hello_kind kind = hello_kind::join;
  std::uint8_t family = 4;
  std::int32_t rank = 0;
  std::int32_t size = 0;
  std::uint64_t token = 0;
  std::uint16_t port = 0;  // the sender's listening port (join only)
  std::array<std::uint8_t, 16> address{};

  void encode(std::byte* b) const noexcept {
    std::memset(b, 0, hello_size);
    put(b + 0, magic);
    put(b + 4, version);
    put(b + 6, static_cast<std::uint8_t>(kind));
    put(b + 7, family);
    put(b + 8, rank);
    put(b + 12, size);
    put(b + 16, token);
    put(b + 24, port);
    std::memcpy(b + 32, address.data(), 16);
  }
  static hello decode(std::byte const* b) noexcept {
    hello h;
    h.magic = get<std::uint32_t>(b + 0);
    h.version = get<std::uint16_t>(b + 4);
    h.kind = static_cast<hello_kind>(get<std::uint8_t>(b + 6));
    h.family = get<std::uint8_t>(b + 7);
    h.rank = get<std::int32_t>(b + 8);
    h.size = get<std::int32_t>(b + 12);
    h.token = get<std::uint64_t>(b + 16);
    h.port = get<std::uint16_t>(b + 24);
    std::memcpy(h.address.data(), b + 32, 16);
    return h;
  }
};

// status 0 = accepted; otherwise an errc and a sentence for the refused rank's error message.
inline void encode_reply(std::byte* b, std::uint32_t status, std::string_view text) noexcept {
  std::memset(b, 0, reply_size);
  put(b + 0, reply_magic);
  put(b + 4, status);
  std::memcpy(b + 8, text.data(), std::min(text.size(), reply_size - 9));
}

// FNV-1a: the token is compared, not kept secret (see tcp_options::token).
inline std::uint64_t token_hash(std::string_view token) noexcept {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : token) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace gcl::detail
