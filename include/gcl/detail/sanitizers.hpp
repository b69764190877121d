#pragma once
/// \file
/// Which sanitizer instruments this translation unit: GCL_DETAIL_TSAN (ThreadSanitizer) and
/// GCL_DETAIL_ASAN (AddressSanitizer) are defined, as 1, when one does. GCC says so with
/// `__SANITIZE_THREAD__` and `__SANITIZE_ADDRESS__`; clang 14 defines neither and answers
/// through `__has_feature` instead, so a test of one macro alone misses clang's builds.

#if defined(__SANITIZE_THREAD__)
#define GCL_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GCL_DETAIL_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define GCL_DETAIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GCL_DETAIL_ASAN 1
#endif
#endif
