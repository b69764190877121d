#pragma once
/// \file
/// Chunk arithmetic for splitting `count` elements into `parts` nearly equal chunks: the first
/// `count % parts` chunks are one element larger. Used by ring (and any algorithm that
/// scatters), and by `reduce_scatter` to say which part of the result each rank receives.

#include <cstddef>

namespace gcl::detail {

/// `count` elements split into `parts` chunks; chunk `c` is `[offset(c), offset(c) + size(c))`.
///
///     gcl::detail::chunk_layout l{10, 4};  // sizes 3 3 2 2, offsets 0 3 6 8
struct chunk_layout {
  std::size_t count = 0;
  int parts = 1;

  /// Elements in chunk `c`: `count / parts`, plus one for the first `count % parts` chunks.
  constexpr std::size_t size(int c) const noexcept {
    auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(c);
    return count / p + (i < count % p ? 1 : 0);
  }
  /// Index of the first element of chunk `c`; `offset(parts) == count`.
  constexpr std::size_t offset(int c) const noexcept {
    auto p = static_cast<std::size_t>(parts), i = static_cast<std::size_t>(c);
    auto rem = count % p;
    return i * (count / p) + (i < rem ? i : rem);
  }
  /// The largest chunk: the size of a scratch buffer that can hold any of them.
  constexpr std::size_t max_size() const noexcept { return size(0); }
};

/// `x mod n` in [0, n) for any sign of `x`: `mod(-1, 4) == 3`.
constexpr int mod(int x, int n) noexcept {
  return ((x % n) + n) % n;
}

}  // namespace gcl::detail
