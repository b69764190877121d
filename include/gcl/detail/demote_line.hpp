#pragma once
/// \file
/// `demote_line(p)`: a hint that the cache line holding `p` is done with on this core and will
/// be read by another, so that it is moved from this core's private caches to the shared one.
///
/// A line a core has just written sits in that core's first-level cache, modified. Another
/// core that reads it then misses in the shared cache too and has to fetch it from the
/// writer's core, the slowest kind of cache miss. x86's CLDEMOTE (Intel since Sapphire Rapids
/// and Tremont) writes the line into the shared cache ahead of that read; a processor without
/// it runs it as a no-op (its encoding is in the reserved no-op hint space, on AMD's too). On
/// other architectures this does nothing.
///
/// For a line that one thread writes and one other thread then polls (a message's cell in
/// inproc_transport): where the reader runs on the same core, as when ranks outnumber the
/// cores, the line is better left where it is, and the caller does not demote.

namespace gcl::detail {

inline void demote_line(void const* p) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("cldemote %0" ::"m"(*static_cast<char const*>(p)));
#else
  (void)p;
#endif
}

}  // namespace gcl::detail
