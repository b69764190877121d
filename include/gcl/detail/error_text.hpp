#pragma once
/// \file
/// The words every transport error message is made of, written once so that all transports say
/// them alike: who is speaking ("gcl: rank 3: "), which tag a message had, how long a timeout
/// was.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "../call_info.hpp"
#include "context.hpp"

namespace gcl::detail {

/// "gcl: rank 3: ", the start of every error this rank reports (doc/requirements/transport.md:
/// a `transport_error`'s `what()` begins `gcl: rank R:`).
inline std::string rank_prefix(int rank) {
  return "gcl: rank " + std::to_string(rank) + ": ";
}

/// "tag 7" for a user's tag, "library tag 2147483648" for one the library reserves (collectives
/// and decorators), so that a report says whose message it was; "tag 7 of communicator 3" for
/// one of a communicator made by split or dup (its context id in bits 20-29, context.hpp).
inline std::string tag_text(tag tg) {
  auto const ctx = context_of(tg);
  auto const bare = static_cast<std::uint32_t>(tag_without_context(tg));
  std::string s = bare >= tag_user_limit ? "library tag " + std::to_string(bare)
                                         : "tag " + std::to_string(bare);
  if (ctx != 0) s += " of communicator " + std::to_string(ctx);
  return s;
}

/// "1.5 s", "200 ms": how long a timeout was, for error messages.
inline std::string format_duration(std::chrono::milliseconds d) {
  char buf[32];
  if (d.count() % 1000 == 0)
    std::snprintf(buf, sizeof buf, "%lld s", static_cast<long long>(d.count() / 1000));
  else if (d.count() >= 1000)
    std::snprintf(buf, sizeof buf, "%.3g s", static_cast<double>(d.count()) / 1000.0);
  else
    std::snprintf(buf, sizeof buf, "%lld ms", static_cast<long long>(d.count()));
  return buf;
}

}  // namespace gcl::detail
