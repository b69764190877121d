#pragma once
// Shared by the collective and algorithm tests: the world sizes and lengths every collective is
// swept over, integer-valued data with exact oracles, and helpers that run a world and report
// per-rank failures on the main thread (Boost.Test assertions are not thread-safe). `run` runs
// every check twice: over inproc_transport and over the send/recv-only archetype.

#include <boost/test/unit_test.hpp>

#include <gcl/error.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "../support/archetype_transport.hpp"

namespace gcl_test {

inline constexpr int world_sizes[] = {1, 2, 3, 4, 5, 7, 8};
inline constexpr std::size_t large = 100003;  // odd and large

/// {0, 1, P-1, P, P+1, 37, large}, deduplicated and sorted.
inline std::vector<std::size_t> lengths(int p, std::size_t big = large) {
  auto up = static_cast<std::size_t>(p);
  std::vector<std::size_t> l{0, 1, up - 1, up, up + 1, 37, big};
  std::sort(l.begin(), l.end());
  l.erase(std::unique(l.begin(), l.end()), l.end());
  return l;
}

/// Element i of rank r's data: small positive integers, exact in float, distinct per rank.
template <class T>
T value(int r, std::size_t i) {
  return static_cast<T>((r + 1) * static_cast<int>(i % 101 + 1) + static_cast<int>(i % 7));
}

/// "" if equal, else the first difference.
template <class T>
std::string diff(std::vector<T> const& got, std::vector<T> const& want) {
  if (got.size() != want.size())
    return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      std::ostringstream s;
      s << "element " << i << ": got " << got[i] << ", want " << want[i];
      return s.str();
    }
  return "";
}

/// Runs f(comm) -> std::string on p ranks and checks every rank returned "": once over
/// inproc_transport, once over archetype_transport (rank, size, send and recv, nothing optional:
/// every fallback of the communicator). `f` runs twice, so state it captures and changes must be
/// reset by `f` itself.
template <class F>
void run(int p, std::string const& context, F f) {
  auto check = [&](std::vector<std::string> const& errors, char const* over) {
    for (int r = 0; r < p; ++r)
      BOOST_TEST(errors[static_cast<std::size_t>(r)].empty(),
                 context << over << " rank " << r << ": " << errors[static_cast<std::size_t>(r)]);
  };
  check(gcl::spawn<gcl::inproc_transport>(p, f), "");
  check(spawn_archetype(p, f), " (archetype transport)");
}

/// Runs f on p ranks, expecting spawn to rethrow a mismatch (transport_error errc::mismatch)
/// or a usage_error; returns what() ("" and a failed check if nothing was thrown).
template <class F>
std::string expect_mismatch(int p, F f) {
  try {
    gcl::spawn<gcl::inproc_transport>(p, f, {.timeout = std::chrono::seconds{10}});
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
    return e.what();
  } catch (gcl::usage_error const& e) {
    return e.what();
  }
  BOOST_TEST(false, "P=" << p << ": ranks passing different counts did not fail");
  return "";
}

/// Like expect_mismatch, but a timeout is also accepted: when the disagreeing ranks exchange no
/// message (different roots, different collectives), waiting is all a rank can observe.
template <class F>
std::string expect_mismatch_or_timeout(int p, F f) {
  try {
    gcl::spawn<gcl::inproc_transport>(p, f, {.timeout = std::chrono::milliseconds{500}});
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::mismatch || e.code() == gcl::errc::timeout),
               "P=" << p << ": " << e.what());
    return e.what();
  }
  BOOST_TEST(false, "P=" << p << ": ranks disagreeing about the call did not fail");
  return "";
}

/// A rank that passes a different count is named, and so is a second rank.
inline void check_names_two_ranks(std::string const& what, int odd_rank) {
  BOOST_TEST(what.find("rank " + std::to_string(odd_rank)) != std::string::npos, what);
  std::size_t first = what.find("rank "), second = what.find("rank ", first + 1);
  BOOST_TEST((first != std::string::npos && second != std::string::npos), what);
}

}  // namespace gcl_test
