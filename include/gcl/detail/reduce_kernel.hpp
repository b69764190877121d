#pragma once
/// \file
/// The local combine loops every reducing algorithm runs. Templated on the element type and the
/// operator only (never on the transport or the algorithm), so each (T, Op) pair is compiled
/// once however many algorithms use it.

#include <cstddef>

namespace gcl::detail {

// Why blocks of a fixed length: GCC 12 at -O2 uses the "very cheap" vectoriser cost model,
// which refuses loops that need a runtime epilogue. An inner loop of compile-time length is
// vectorised at -O2 as well as -O3; the tail is a plain scalar loop. __restrict tells the
// compiler the buffers do not overlap (callers guarantee it), so no runtime alias checks.
template <class T>
inline constexpr std::size_t reduce_block = 64 / sizeof(T) >= 4 ? 64 / sizeof(T) : 4;

/// `acc[i] = op(acc[i], in[i])` for i < n: `acc` holds the lower ranks' partial result.
template <class T, class Op>
void reduce_into(T* __restrict acc, T const* __restrict in, std::size_t n, Op const& op) {
  constexpr std::size_t b = reduce_block<T>;
  std::size_t i = 0;
  for (; i + b <= n; i += b)
    for (std::size_t j = 0; j < b; ++j) acc[i + j] = op(acc[i + j], in[i + j]);
  for (; i < n; ++i) acc[i] = op(acc[i], in[i]);
}

/// `acc[i] = op(lower[i], acc[i])`: the received operand comes from lower ranks, so it is the
/// left one. Same fixed-length inner loop as `reduce_into`, so that it vectorises at -O2.
template <class T, class Op>
void reduce_from_lower(T* __restrict acc, T const* __restrict lower, std::size_t n, Op const& op) {
  constexpr std::size_t b = reduce_block<T>;
  std::size_t i = 0;
  for (; i + b <= n; i += b)
    for (std::size_t j = 0; j < b; ++j) acc[i + j] = op(lower[i + j], acc[i + j]);
  for (; i < n; ++i) acc[i] = op(lower[i], acc[i]);
}

/// `out[i] = op(a[i], b[i])` for i < n, with `out` distinct from `a` and `b`.
template <class T, class Op>
void reduce_to(T* __restrict out, T const* __restrict a, T const* __restrict b, std::size_t n,
               Op const& op) {
  constexpr std::size_t blk = reduce_block<T>;
  std::size_t i = 0;
  for (; i + blk <= n; i += blk)
    for (std::size_t j = 0; j < blk; ++j) out[i + j] = op(a[i + j], b[i + j]);
  for (; i < n; ++i) out[i] = op(a[i], b[i]);
}

}  // namespace gcl::detail
