#pragma once
/// \file
/// The words every transport error message is made of, written once so that all transports say
/// them alike: who is speaking ("gcl: rank 3: ") and which tag a message had.

#include <cstdint>
#include <string>

#include "../call_info.hpp"

namespace gcl::detail {

/// "gcl: rank 3: ", the start of every error this rank reports (doc/requirements/transport.md:
/// a `transport_error`'s `what()` begins `gcl: rank R:`).
inline std::string rank_prefix(int rank) {
  return "gcl: rank " + std::to_string(rank) + ": ";
}

/// "tag 7" for a user's tag, "library tag 2147483648" for one the library reserves (collectives
/// and decorators), so that a report says whose message it was.
inline std::string tag_text(tag tg) {
  auto v = static_cast<std::uint32_t>(tg);
  return v >= tag_user_limit ? "library tag " + std::to_string(v) : "tag " + std::to_string(v);
}

}  // namespace gcl::detail
