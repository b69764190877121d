#pragma once
// An environment variable that is a switch: "0" or "1" and nothing else, so that a typo never
// turns a switch on or off unnoticed (GCL_SHM_CMA, GCL_SPREAD).

#include <string>
#include <string_view>

#include "../error.hpp"

namespace gcl::detail {

// The switch `name` set to `value`: "1" true, "0" false; anything else throws usage_error
// naming the variable and its value.
inline bool env_flag(char const* name, std::string_view value) {
  if (value != "0" && value != "1")
    throw usage_error("gcl: environment variable " + std::string(name) + "='" + std::string(value) +
                      "' is not 0 or 1");
  return value == "1";
}

}  // namespace gcl::detail
