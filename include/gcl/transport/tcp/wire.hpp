#pragma once
// The bytes tcp_transport puts on the wire: the frame header in front of every message, the
// hello a connecting rank sends (and, joining rank 0, its CPUs), the reply to it, and rank 0's
// address table. Fixed sizes so a reader always knows how much to read next; fields are copied
// one by one (no struct punning) so the layout does not depend on the compiler. Byte order is
// the host's: a peer of the other byte order shows up as a wrong magic, which is reported as
// such.
//
// Received bytes are decoded only here, by pure functions that take a bounded span and check
// everything they return: a peer that passed the handshake (or a stranger, or a bit flip) is
// not trusted with this process's memory. Whatever the bytes, a decoder reads inside its span
// and either returns values that are safe to use (names NUL-terminated, enums known, texts
// bounded) or says what was wrong. test/fuzz/ runs each decoder under libFuzzer.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "../../call_info.hpp"
#include "../../error.hpp"

namespace gcl::detail {

inline constexpr std::uint32_t frame_magic = 0x314c4347;  // "GCL1"
inline constexpr std::uint32_t hello_magic = 0x484c4347;  // "GCLH"
inline constexpr std::uint32_t reply_magic = 0x524c4347;  // "GCLR"
// 3: the hello and the address table carry each rank's host key (host_key below).
// 4: ... and whether the rank shares a core with other ranks (hello_shares_cores, table flags).
// 5: ... and whether its host has more than two ranks per CPU (hello_over_two_per_cpu, table
//    flags).
// 6: a join hello is followed by the joining rank's machine and CPUs (hello_cpus), from which
//    rank 0 judges whether the ranks of each machine share cores (table_cores_judged).
// 7: ... and whether its host has at least two ranks per CPU (hello_crowds_cores,
//    table_crowds_cores).
// 8: status frames carry a query number (frame_header::query), so that a late answer to an
//    earlier query is not taken for the answer to the last.
inline constexpr std::uint16_t wire_version = 8;

// status_query asks a rank's I/O thread where its rank is; status_reply answers with the
// rank's last collective in `call`, and in `tag` bit 0 "still inside it" and bits 1.. the rank
// it waits for plus one (0: none). A query carries its number in `query`, and the reply the
// number of the query it answers. Both carry no payload. A stopped process cannot answer.
enum class frame_type : std::uint8_t {
  data = 1,
  bye = 2,
  abort = 3,
  status_query = 4,
  status_reply = 5
};

inline constexpr std::size_t frame_header_size = 80;
inline constexpr std::size_t hello_size = 96;
inline constexpr std::size_t hello_cpus_size = 144;
inline constexpr std::size_t reply_size = 128;
inline constexpr std::size_t table_entry_size = 56;

// Which ranks may share memory: 32 bytes that are equal for two ranks exactly when they run on
// one booted kernel, in one network namespace (whose abstract Unix sockets they share), as one
// user (gcl::hybrid_transport; see host_key.hpp). All zero: not given.
using host_key = std::array<std::uint8_t, 32>;

// Limits on what a frame header may make the receiver do, whoever sent it:
//  - an abort frame's text (an error message: a few hundred bytes in practice);
inline constexpr std::uint64_t abort_text_limit = std::uint64_t{64} << 10;
//  - a collective's frame carries at most count x element size x world size bytes, or this
//    much, whichever is more: algorithms also send small control messages under the
//    collective's call_info (automatic's two-double timings, calibrate's cost model) that a
//    tiny collective's own bound would not allow;
inline constexpr std::uint64_t control_message_allowance = std::uint64_t{64} << 10;
//  - a payload that is not read straight into a posted receive is allocated this much at a time
//    as its bytes arrive, never all at once from the header's length.
inline constexpr std::size_t receive_step = std::size_t{64} << 20;

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

// What a decoder returns: a checked value, or (error not empty) what was wrong with the bytes.
template <class T>
struct decoded {
  T value{};
  std::string error;
  explicit operator bool() const noexcept { return error.empty(); }
};

template <class T>
decoded<T> refused_bytes(std::string why) {
  decoded<T> d;
  d.error = std::move(why);
  return d;
}

inline std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", static_cast<unsigned>(v));
  return buf;
}

inline std::string size_problem(char const* what, std::size_t expected, std::size_t got) {
  return std::string(what) + " is " + std::to_string(expected) + " bytes, got " +
         std::to_string(got);
}

struct frame_header {
  std::uint32_t magic = frame_magic;
  std::uint16_t version = wire_version;
  frame_type type = frame_type::data;
  // status_query: its number (counted mod 256 by the asking rank, never 0); status_reply: the
  // number of the query it answers. 0 in every other frame.
  std::uint8_t query = 0;
  std::uint32_t tag = 0;  // for abort frames: the errc
  std::int32_t source = 0;
  call_info call;
  std::uint64_t length = 0;

  void encode(std::byte* b) const noexcept {
    put(b + 0, magic);
    put(b + 4, version);
    put(b + 6, static_cast<std::uint8_t>(type));
    put(b + 7, query);
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
};

// The first frame_header_size bytes of `b` as a frame header: right magic and version, a known
// frame type, call kind and element type, NUL-terminated operator and algorithm names (so
// describe() cannot overrun). The source rank and the length are the caller's to judge (see
// frame_problem).
inline decoded<frame_header> decode_frame_header(std::span<std::byte const> b) {
  if (b.size() < frame_header_size)
    return refused_bytes<frame_header>(size_problem("a frame header", frame_header_size, b.size()));
  auto const* p = b.data();
  decoded<frame_header> d;
  auto& h = d.value;
  h.magic = get<std::uint32_t>(p + 0);
  if (h.magic != frame_magic)
    return refused_bytes<frame_header>("wrong frame magic " + hex32(h.magic) + " (expected " +
                                       hex32(frame_magic) + ")");
  h.version = get<std::uint16_t>(p + 4);
  if (h.version != wire_version)
    return refused_bytes<frame_header>("frame of wire version " + std::to_string(h.version) +
                                       ", this rank speaks " + std::to_string(wire_version));
  auto type = get<std::uint8_t>(p + 6);
  if (type < static_cast<std::uint8_t>(frame_type::data) ||
      type > static_cast<std::uint8_t>(frame_type::status_reply))
    return refused_bytes<frame_header>("unknown frame type " + std::to_string(type));
  h.type = static_cast<frame_type>(type);
  h.query = get<std::uint8_t>(p + 7);
  h.tag = get<std::uint32_t>(p + 8);
  h.source = get<std::int32_t>(p + 12);
  auto kind = get<std::uint8_t>(p + 16);
  if (kind > static_cast<std::uint8_t>(last_call_kind))
    return refused_bytes<frame_header>("unknown call kind " + std::to_string(kind));
  h.call.kind = static_cast<call_kind>(kind);
  auto element = get<std::uint8_t>(p + 17);
  if (element > static_cast<std::uint8_t>(dtype::other))
    return refused_bytes<frame_header>("unknown element type " + std::to_string(element));
  h.call.type = static_cast<dtype>(element);
  h.call.element_size = get<std::uint16_t>(p + 18);
  h.call.root = get<std::int32_t>(p + 20);
  h.call.sequence = get<std::uint64_t>(p + 24);
  h.call.count = get<std::uint64_t>(p + 32);
  std::memcpy(h.call.op, p + 40, sizeof h.call.op);
  std::memcpy(h.call.algorithm, p + 52, sizeof h.call.algorithm);
  // make_call_info always leaves a NUL at the end of each name; anything else is not gcl's.
  if (h.call.op[sizeof h.call.op - 1] != '\0')
    return refused_bytes<frame_header>("operator name is not NUL-terminated");
  if (h.call.algorithm[sizeof h.call.algorithm - 1] != '\0')
    return refused_bytes<frame_header>("algorithm name is not NUL-terminated");
  h.length = get<std::uint64_t>(p + 72);
  return d;
}

// The most bytes a frame of call `c` may carry in a job of `world_size` ranks: count x element
// size x world size (no collective's message is larger), saturating instead of overflowing,
// and at least control_message_allowance.
inline std::uint64_t frame_length_limit(call_info const& c, int world_size) noexcept {
  constexpr auto max = std::numeric_limits<std::uint64_t>::max();
  // A variable-count collective's count is a digest, not a size: no bound but the receiver's.
  if (has_variable_counts(c.kind)) return max;
  std::uint64_t const n = c.count, e = c.element_size;
  std::uint64_t const p = world_size > 0 ? static_cast<std::uint64_t>(world_size) : 0;
  std::uint64_t bytes = max;
  if (e == 0 || n <= max / e) {
    bytes = n * e;
    bytes = p == 0 || bytes <= max / p ? bytes * p : max;
  }
  return std::max(bytes, control_message_allowance);
}

// What a status_reply says besides its rank's last collective (its header's call): whether
// the rank is still inside that call and which rank it waits for, -1 if none. Carried in the
// header's tag: bit 0 "inside", bits 1.. the rank waited for plus one (0: none).
struct status_fields {
  bool in_call = false;
  int waiting_for = -1;
};

inline std::uint32_t encode_status_tag(status_fields s) noexcept {
  return (s.in_call ? 1u : 0u) | (static_cast<std::uint32_t>(s.waiting_for + 1) << 1);
}

// A status reply from a job of `world_size` ranks: no payload, and a rank waited for that is
// one of the job's (the receiver names it in its reports and indexes by it).
inline decoded<status_fields> decode_status(frame_header const& h, int world_size) {
  if (h.type != frame_type::status_reply)
    return refused_bytes<status_fields>("not a status reply (frame type " +
                                        std::to_string(static_cast<unsigned>(h.type)) + ")");
  if (h.length != 0)
    return refused_bytes<status_fields>("a status reply that claims a payload of " +
                                        std::to_string(h.length) + " bytes (it carries none)");
  std::uint32_t const plus_one = h.tag >> 1;  // < 2^31: fits an int with room for - 1
  if (world_size < 1 || plus_one > static_cast<std::uint32_t>(world_size))
    return refused_bytes<status_fields>("a status reply that says its rank waits for rank " +
                                        std::to_string(plus_one - 1) + " (the job has " +
                                        std::to_string(world_size) + " ranks)");
  decoded<status_fields> d;
  d.value.in_call = (h.tag & 1u) != 0;
  d.value.waiting_for = static_cast<int>(plus_one) - 1;
  return d;
}

// Empty if a decoded header's length is plausible for its frame type and call; otherwise why
// not, for a protocol error. Point-to-point data frames have no bound of their own (the user
// sends what they like): the receiver allocates them step by step (receive_step) as they
// arrive, and compares them with a posted receive before reading them.
inline std::string frame_problem(frame_header const& h, int world_size) {
  switch (h.type) {
    case frame_type::bye:
      if (h.length != 0)
        return "a bye frame that claims a payload of " + std::to_string(h.length) +
               " bytes (it carries none)";
      return {};
    case frame_type::abort:
      if (h.length > abort_text_limit)
        return "an abort frame of " + std::to_string(h.length) + " bytes (at most " +
               std::to_string(abort_text_limit) + " are allowed)";
      return {};
    case frame_type::status_query:
      if (h.length != 0)
        return "a status query that claims a payload of " + std::to_string(h.length) +
               " bytes (it carries none)";
      return {};
    case frame_type::status_reply:
      return decode_status(h, world_size).error;
    case frame_type::data:
      if (h.call.kind != call_kind::point_to_point) {
        auto limit = frame_length_limit(h.call, world_size);
        if (h.length > limit)
          return "a frame of " + std::to_string(h.length) + " bytes for " + describe(h.call) +
                 ", more than the " + std::to_string(limit) +
                 " bytes its call allows (count x element size x world size " +
                 std::to_string(world_size) + ")";
      }
      return {};
  }
  return "unknown frame type";  // decode_frame_header lets none through
}

enum class hello_kind : std::uint8_t { join = 1, peer = 2 };  // join: register with rank 0
inline constexpr std::uint8_t hello_connects_same_host = 1;
inline constexpr std::uint8_t hello_shares_cores = 2;      // tcp_options::shares_cores
inline constexpr std::uint8_t hello_over_two_per_cpu = 4;  // tcp_options::over_two_per_cpu
inline constexpr std::uint8_t hello_crowds_cores = 8;      // tcp_options::crowds_cores

struct hello {
  std::uint32_t magic = hello_magic;
  std::uint16_t version = wire_version;
  hello_kind kind = hello_kind::join;
  std::uint8_t family = 4;
  std::int32_t rank = 0;
  std::int32_t size = 0;
  std::uint64_t token = 0;
  std::uint16_t port = 0;  // the sender's listening port (join only)
  // Bit 0: the sender connects to ranks of its own host (tcp_options::connect_same_host).
  // Bit 1: the sender shares a core with other ranks (tcp_options::shares_cores; join only).
  // Bit 2: its host has more than two ranks per CPU (tcp_options::over_two_per_cpu; join only).
  // Bit 3: ... at least two ranks per CPU (tcp_options::crowds_cores; join only).
  std::uint8_t flags = hello_connects_same_host;
  std::array<std::uint8_t, 16> address{};
  host_key key{};  // the sender's (join only)

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
    put(b + 26, flags);
    std::memcpy(b + 32, address.data(), 16);
    std::memcpy(b + 64, key.data(), key.size());
  }
};

// Whether `b` starts like a hello: a gcl peer (of any version) that deserves a reply saying why
// it was refused, unlike a stranger.
inline bool is_gcl_hello(std::span<std::byte const> b) noexcept {
  return b.size() >= 4 && get<std::uint32_t>(b.data()) == hello_magic;
}

// A hello: right magic and version, a known kind, address family 4 or 6. Whether its rank,
// size and token fit this job is the listener's to judge.
inline decoded<hello> decode_hello(std::span<std::byte const> b) {
  if (b.size() < hello_size)
    return refused_bytes<hello>(size_problem("a hello", hello_size, b.size()));
  auto const* p = b.data();
  decoded<hello> d;
  auto& h = d.value;
  h.magic = get<std::uint32_t>(p + 0);
  if (h.magic != hello_magic) return refused_bytes<hello>("not a gcl peer (wrong magic)");
  h.version = get<std::uint16_t>(p + 4);
  if (h.version != wire_version)
    return refused_bytes<hello>("speaks gcl wire version " + std::to_string(h.version) +
                                ", this rank speaks " + std::to_string(wire_version));
  auto kind = get<std::uint8_t>(p + 6);
  if (kind != static_cast<std::uint8_t>(hello_kind::join) &&
      kind != static_cast<std::uint8_t>(hello_kind::peer))
    return refused_bytes<hello>("unknown hello kind " + std::to_string(kind));
  h.kind = static_cast<hello_kind>(kind);
  h.family = get<std::uint8_t>(p + 7);
  if (h.family != 4 && h.family != 6)
    return refused_bytes<hello>("address family " + std::to_string(h.family) +
                                " (neither 4 nor 6)");
  h.rank = get<std::int32_t>(p + 8);
  h.size = get<std::int32_t>(p + 12);
  h.token = get<std::uint64_t>(p + 16);
  h.port = get<std::uint16_t>(p + 24);
  h.flags = get<std::uint8_t>(p + 26);
  std::memcpy(h.address.data(), p + 32, 16);
  std::memcpy(h.key.data(), p + 64, h.key.size());
  return d;
}

// What follows a join hello (version 6 on): the joining rank's machine, and the CPUs it may run
// on. Rank 0 reads it only after a join hello of its own version, so that a peer of another
// version is told so rather than kept waiting for bytes it does not send, and before judging
// that hello, so that a refusal leaves nothing unread. Any 144 bytes decode: all-zero fields
// mean "not known".
struct hello_cpus {
  // The machine's boot id (detail/boot_id.hpp): ranks with the same one run on the same CPUs.
  std::array<std::uint8_t, 16> machine{};
  // Bit c % 8 of byte c / 8: the rank may run on CPU c (CPUs 0 to 1023, as a cpu_set_t).
  std::array<std::uint8_t, 128> cpus{};

  void encode(std::byte* b) const noexcept {
    std::memcpy(b, machine.data(), machine.size());
    std::memcpy(b + machine.size(), cpus.data(), cpus.size());
  }
  // The first hello_cpus_size bytes of `b`, which must hold that many.
  static hello_cpus decode(std::span<std::byte const, hello_cpus_size> b) noexcept {
    hello_cpus h;
    std::memcpy(h.machine.data(), b.data(), h.machine.size());
    std::memcpy(h.cpus.data(), b.data() + h.machine.size(), h.cpus.size());
    return h;
  }
};
static_assert(sizeof(hello_cpus::machine) + sizeof(hello_cpus::cpus) == hello_cpus_size);

// status 0 = accepted; otherwise an errc and a sentence for the refused rank's error message.
// Returns the reply by value rather than writing through a pointer: the compiler then sees the
// 128 bytes it fills (through a pointer into a vector, GCC 12 could not prove the vector
// non-empty and warned about the memset at -O2/-O3).
inline std::array<std::byte, reply_size> encode_reply(std::uint32_t status,
                                                      std::string_view text) noexcept {
  std::array<std::byte, reply_size> b{};
  put(b.data() + 0, reply_magic);
  put(b.data() + 4, status);
  std::memcpy(b.data() + 8, text.data(), std::min(text.size(), reply_size - 9));
  return b;
}

// The largest errc a reply may carry (the last of gcl::errc).
inline constexpr std::uint32_t reply_status_max = static_cast<std::uint32_t>(errc::mismatch);
// Room for the text: bytes 8..127, which must include its terminating NUL.
inline constexpr std::size_t reply_text_room = reply_size - 8;

struct reply {
  std::uint32_t status = 0;  // 0: accepted; else a gcl::errc
  std::string text;          // at most reply_text_room - 1 bytes, no NUL, no control character
};

// The first reply_size bytes of `b` as a reply: right magic, a status that is 0 or a gcl::errc,
// a text that ends with a NUL inside the reply. The text goes into an error message: control
// characters (a terminal's escape sequences) are shown as '?'.
inline decoded<reply> decode_reply(std::span<std::byte const> b) {
  if (b.size() < reply_size)
    return refused_bytes<reply>(size_problem("a reply", reply_size, b.size()));
  auto const* p = b.data();
  if (get<std::uint32_t>(p) != reply_magic)
    return refused_bytes<reply>("not a gcl reply (wrong magic)");
  decoded<reply> d;
  d.value.status = get<std::uint32_t>(p + 4);
  if (d.value.status > reply_status_max)
    return refused_bytes<reply>("reply status " + std::to_string(d.value.status) +
                                " is not a gcl error code");
  auto const* text = reinterpret_cast<unsigned char const*>(p + 8);
  auto const* end = std::find(text, text + reply_text_room, 0);
  if (end == text + reply_text_room)
    return refused_bytes<reply>("reply text is not NUL-terminated within its " +
                                std::to_string(reply_text_room) + " bytes");
  d.value.text.assign(text, end);
  for (char& c : d.value.text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return d;
}

// One rank's entry in rank 0's address table: where the other ranks connect to it.
inline constexpr std::uint8_t table_shares_cores = 1;      // tcp_options::shares_cores
inline constexpr std::uint8_t table_over_two_per_cpu = 2;  // tcp_options::over_two_per_cpu
inline constexpr std::uint8_t table_crowds_cores = 8;      // tcp_options::crowds_cores
// The bits above are rank 0's judgement from the CPUs of every rank of the rank's machine
// (hello_cpus; tcp/cores.hpp), not the rank's own guess from its hello.
inline constexpr std::uint8_t table_cores_judged = 4;

struct table_entry {
  std::uint8_t family = 4;                 // 4 or 6
  std::uint16_t port = 0;                  // its listening port
  std::array<std::uint8_t, 16> address{};  // IPv4: the first 4 bytes
  host_key key{};                          // its host key (as its hello gave it)
  // table_shares_cores, table_over_two_per_cpu, table_crowds_cores, table_cores_judged
  std::uint8_t flags = 0;
};

// Entry i at out[table_entry_size * i]; `out` must hold table_entry_size * entries.size() bytes.
inline void encode_table(std::byte* out, std::span<table_entry const> entries) noexcept {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    std::byte* e = out + table_entry_size * i;
    std::memset(e, 0, table_entry_size);
    put(e + 0, entries[i].family);
    put(e + 1, entries[i].flags);
    put(e + 2, entries[i].port);
    std::memcpy(e + 8, entries[i].address.data(), 16);
    std::memcpy(e + 24, entries[i].key.data(), entries[i].key.size());
  }
}

// The address table of a job of `world_size` ranks: exactly that many entries, each of family
// 4 or 6; every rank but 0 (whose entry nobody uses: ranks reach it at the master address)
// with a port.
inline decoded<std::vector<table_entry>> decode_table(std::span<std::byte const> b,
                                                      int world_size) {
  using result = std::vector<table_entry>;
  if (world_size < 1)
    return refused_bytes<result>("an address table for " + std::to_string(world_size) + " ranks");
  auto const n = static_cast<std::size_t>(world_size);
  if (b.size() != table_entry_size * n)
    return refused_bytes<result>(
        size_problem(("the address table of " + std::to_string(world_size) + " ranks").c_str(),
                     table_entry_size * n, b.size()));
  decoded<result> d;
  d.value.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto const* e = b.data() + table_entry_size * i;
    auto& t = d.value[i];
    t.family = get<std::uint8_t>(e);
    if (t.family != 4 && t.family != 6)
      return refused_bytes<result>("the address table gives rank " + std::to_string(i) +
                                   " address family " + std::to_string(t.family) +
                                   " (neither 4 nor 6)");
    t.flags = get<std::uint8_t>(e + 1);
    t.port = get<std::uint16_t>(e + 2);
    if (i != 0 && t.port == 0)
      return refused_bytes<result>("the address table gives rank " + std::to_string(i) + " port 0");
    std::memcpy(t.address.data(), e + 8, 16);
    std::memcpy(t.key.data(), e + 24, t.key.size());
  }
  return d;
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
