#pragma once
// Formatting helpers shared by the transports' error messages.

#include <chrono>
#include <cstdio>
#include <string>

namespace gcl::detail {

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
