#pragma once
/// \file
/// What a rank believes it is doing when it sends: the collective, its sequence number, the
/// element type, the count, the root, the operator and the algorithm. Transports that carry it
/// (inproc in the envelope, tcp in the frame header) compare it on receipt, so ranks that call
/// different collectives, or the same one with different arguments, fail on the first message
/// with `errc::mismatch` naming both sides, instead of hanging or computing garbage.

#include <complex>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace gcl {

/// Message tag: separates independent streams between the same pair of ranks.
/// User code may use any value below `tag_user_limit`; the library reserves the rest.
///
///     comm.send(1, payload, gcl::tag{7});
enum class tag : std::uint32_t {};

/// Tags at or above this value (2^20, where MPI promises at least 2^15 - 1) are reserved: for
/// collectives, transport decorators and the communicator's context (bits 20-29, which keep
/// the messages of communicators made by `split` and `dup` apart; detail/context.hpp).
inline constexpr std::uint32_t tag_user_limit = 1u << 20;

namespace detail {
/// A collective's sequence number carries its communicator's context id from this bit up
/// (detail/context.hpp), so that numbers of different communicators never compare equal.
inline constexpr int sequence_context_shift = 40;
}  // namespace detail

/// The operation a message belongs to. `point_to_point` for the user's own send/recv.
enum class call_kind : std::uint8_t {
  point_to_point,
  all_reduce,
  reduce,
  broadcast,
  reduce_scatter,
  all_gather,
  gather,
  scatter,
  all_to_all,
  barrier,
  calibrate,
  gatherv,
  scatterv,
  all_gatherv,
  all_to_allv,
  reduce_scatterv,
  scan,
  exscan,
  split,  ///< communicator::split and dup: the exchange of colors, keys and free contexts
};

/// The last `call_kind`: what a decoder of the wire accepts.
inline constexpr call_kind last_call_kind = call_kind::split;

/// Collectives whose ranks pass per-rank counts (gatherv, ...). Their `call_info::count` is not
/// a number of elements: it is `counts_digest` of the counts every rank passes (all_to_allv,
/// whose ranks pass different counts, has 0 and relies on the size check of every message).
constexpr bool has_variable_counts(call_kind k) noexcept {
  return k == call_kind::gatherv || k == call_kind::scatterv || k == call_kind::all_gatherv ||
         k == call_kind::all_to_allv || k == call_kind::reduce_scatterv;
}

/// The element type of a collective, as far as the wire needs to know it.
enum class dtype : std::uint8_t {
  bytes,
  int8,
  uint8,
  int16,
  uint16,
  int32,
  uint32,
  int64,
  uint64,
  float32,
  float64,
  boolean,
  complex64,
  complex128,
  other
};

/// `dtype` of a C++ type: `gcl::dtype_of<float>() == gcl::dtype::float32`.
template <class T>
constexpr dtype dtype_of() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::same_as<U, bool>)
    return dtype::boolean;
  else if constexpr (std::same_as<U, std::byte>)
    return dtype::bytes;
  else if constexpr (std::same_as<U, float>)
    return dtype::float32;
  else if constexpr (std::same_as<U, double>)
    return dtype::float64;
  else if constexpr (std::same_as<U, std::complex<float>>)
    return dtype::complex64;
  else if constexpr (std::same_as<U, std::complex<double>>)
    return dtype::complex128;
  else if constexpr (std::integral<U>) {
    constexpr bool s = std::is_signed_v<U>;
    if constexpr (sizeof(U) == 1)
      return s ? dtype::int8 : dtype::uint8;
    else if constexpr (sizeof(U) == 2)
      return s ? dtype::int16 : dtype::uint16;
    else if constexpr (sizeof(U) == 4)
      return s ? dtype::int32 : dtype::uint32;
    else if constexpr (sizeof(U) == 8)
      return s ? dtype::int64 : dtype::uint64;
    else
      return dtype::other;
  } else
    return dtype::other;
}

/// Short names for messages: "float32", "all_reduce".
constexpr std::string_view name_of(dtype t) noexcept {
  constexpr std::string_view names[] = {"bytes",   "int8",   "uint8",     "int16",      "uint16",
                                        "int32",   "uint32", "int64",     "uint64",     "float32",
                                        "float64", "bool",   "complex64", "complex128", "other"};
  return names[static_cast<int>(t)];
}
constexpr std::string_view name_of(call_kind k) noexcept {
  constexpr std::string_view names[] = {
      "send/recv",       "all_reduce", "reduce",   "broadcast",   "reduce_scatter",
      "all_gather",      "gather",     "scatter",  "all_to_all",  "barrier",
      "calibrate",       "gatherv",    "scatterv", "all_gatherv", "all_to_allv",
      "reduce_scatterv", "scan",       "exscan",   "split"};
  return names[static_cast<int>(k)];
}

/// One call as every rank must agree on it. Fixed-size and trivially copyable so a transport
/// can put it on the wire as it is (tcp) or beside the payload (inproc).
struct call_info {
  call_kind kind = call_kind::point_to_point;
  dtype type = dtype::bytes;
  std::uint16_t element_size = 1;
  std::int32_t root = -1;      ///< -1 where the collective has no root
  std::uint64_t sequence = 0;  ///< 1 for the communicator's first collective, 2 for the next...
  std::uint64_t count = 0;     ///< elements per rank, as the collective defines it (see
                               ///< `has_variable_counts` for the exceptions)
  char op[12] = {};            ///< operator name, "sum", or "custom" for a user callable
  char algorithm[20] = {};     ///< algorithm name, "ring", "tree", ...

  // Byte for byte (there is no padding, asserted below): the defaulted comparison goes name by
  // name a character at a time, and a transport compares the call of every message it takes
  // (measured: shm, 4 B all_reduce at P = 2, that comparison was 4% of the samples).
  friend bool operator==(call_info const& a, call_info const& b) noexcept {
    return std::memcmp(&a, &b, sizeof a) == 0;
  }
};
static_assert(std::has_unique_object_representations_v<call_info>,
              "call_info's bytes are its value: no padding");

namespace detail {
template <std::size_t N>
constexpr void copy_name(char (&to)[N], std::string_view from) noexcept {
  std::size_t i = 0;
  for (; i + 1 < N && i < from.size(); ++i) to[i] = from[i];
  for (; i < N; ++i) to[i] = '\0';
}
}  // namespace detail

/// The `call_info` of a collective on elements of type `T` (its sequence number is set by
/// `communicator::begin_call`):
///
///     auto scope = comm.begin_call(gcl::make_call_info<float>(gcl::call_kind::all_reduce,
///                                                             v.size(), -1, "sum", "ring"));
template <class T>
constexpr call_info make_call_info(call_kind kind, std::uint64_t count, int root,
                                   std::string_view op, std::string_view algorithm) noexcept {
  call_info c;
  c.kind = kind;
  c.type = dtype_of<T>();
  c.element_size = static_cast<std::uint16_t>(sizeof(T));
  c.root = root;
  c.count = count;
  detail::copy_name(c.op, op);
  detail::copy_name(c.algorithm, algorithm);
  return c;
}

/// A 64-bit digest of the per-rank counts of a variable-count collective (FNV-1a over the
/// counts, then mixed): ranks that pass different counts put different digests in their
/// `call_info::count`, so they fail on their first message to each other.
template <class Counts>
constexpr std::uint64_t counts_digest(Counts const& counts) noexcept {
  std::uint64_t h = 0xcbf29ce484222325u;
  for (auto c : counts) {
    auto v = static_cast<std::uint64_t>(c);
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xffu;
      h *= 0x100000001b3u;
    }
  }
  h ^= h >> 33;
  return h;
}

namespace detail {
/// "#3", or "#3 of communicator 2" for a collective of a communicator made by split or dup
/// (its context in the sequence number's high bits): how messages number a collective.
inline std::string sequence_text(std::uint64_t sequence) {
  std::string s =
      "#" + std::to_string(sequence & ((std::uint64_t{1} << sequence_context_shift) - 1));
  if (auto ctx = sequence >> sequence_context_shift; ctx != 0)
    s += " of communicator " + std::to_string(ctx);
  return s;
}
}  // namespace detail

/// "all_reduce #3 (ring, sum, 1000 x float32)" or "send/recv": for error messages.
inline std::string describe(call_info const& c) {
  if (c.kind == call_kind::point_to_point) return std::string(name_of(c.kind));
  std::string s(name_of(c.kind));
  // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) about the
  // memcpy inside `"literal" + std::string&&` once this is inlined into a caller.
  s += " ";
  s += detail::sequence_text(c.sequence);
  s += " (";
  s += c.algorithm;
  s += ", ";
  if (c.op[0] != '\0') s += std::string(c.op) + ", ";
  if (c.kind == call_kind::all_to_allv) {
    s += "per-rank counts of ";
  } else if (has_variable_counts(c.kind)) {
    s += "counts digest ";
    constexpr char hex[] = "0123456789abcdef";
    for (int shift = 60; shift >= 0; shift -= 4) s += hex[(c.count >> shift) & 0xfu];
    s += " of ";
  } else {
    s += std::to_string(c.count) + " x ";
  }
  s += std::string(name_of(c.type));
  if (c.type == dtype::other) s += "[" + std::to_string(c.element_size) + " B]";
  if (c.root >= 0) s += ", root " + std::to_string(c.root);
  return s + ")";
}

}  // namespace gcl
