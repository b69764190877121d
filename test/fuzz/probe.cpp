// Compiled by run.cmake before the harnesses: does this clang have libFuzzer and the
// sanitizer runtimes (Debian: libclang-rt-14-dev)?
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const*, std::size_t) {
  return 0;
}
