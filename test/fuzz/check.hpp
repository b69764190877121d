#pragma once
// What every harness uses: the input as bytes, and an invariant check that ends the run the way
// libFuzzer recognises as a crash (abort), printing which invariant broke.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#define GCL_FUZZ_CHECK(cond)                                                            \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

inline std::span<std::byte const> fuzz_input(std::uint8_t const* data, std::size_t size) {
  return {reinterpret_cast<std::byte const*>(data), size};
}
