#pragma once
// A token no other job guesses: what the ranks of a group formed inside this process (or of a
// forked lane, whose token travels over the job's own connections) prove themselves with.

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace gcl::detail {

// `prefix` followed by 128 random bits in hex.
inline std::string random_token(std::string_view prefix = "gcl-group:") {
  std::random_device rd;  // the OS's entropy source on Linux (getrandom)
  std::string t(prefix);
  for (int i = 0; i < 4; ++i) {
    auto word = static_cast<std::uint32_t>(rd());
    for (int b = 0; b < 8; ++b, word >>= 4) t += "0123456789abcdef"[word & 0xf];
  }
  return t;
}

}  // namespace gcl::detail
