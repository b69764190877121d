#pragma once
/// \file
/// `prefetch_line(p)`: starts fetching the cache line holding `p` for reading, without waiting
/// for it. A load whose value decides a branch stalls the core until the line arrives, a
/// round trip to another core when that core has just written it; a prefetch asks for the
/// line and lets the core go on, so that the line is on its way, or here, when it is read.
/// Where the compiler has no prefetch builtin this does nothing.

namespace gcl::detail {

inline void prefetch_line(void const* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 3);  // for reading, kept in every cache level
#else
  (void)p;
#endif
}

}  // namespace gcl::detail
