#pragma once
// How much heap a test process holds, for tests that prove a transport does not buffer what a
// peer only claims it will send: glibc's own count, which the sanitizers' allocators do not
// keep (`malloc_is_glibc` says whether it means anything).

#include <gcl/detail/sanitizers.hpp>

#include <malloc.h>

#include <cstddef>

namespace gcl_test {

inline std::size_t heap_in_use() {
  auto m = mallinfo2();
  return m.uordblks + m.hblkhd;  // small blocks in the main arena + every mmap'ed block
}

#if defined(GCL_DETAIL_ASAN) || defined(GCL_DETAIL_TSAN)
inline constexpr bool malloc_is_glibc = false;  // the sanitizer's allocator: mallinfo2 says nothing
#else
inline constexpr bool malloc_is_glibc = true;
#endif

}  // namespace gcl_test
