#pragma once
// Shared by the collective and algorithm tests: the world sizes and lengths every collective is
// swept over, integer-valued data with exact oracles, and helpers that run a world and report
// per-rank failures on the main thread (Boost.Test assertions are not thread-safe). `run` runs
// every check twice: over inproc_transport and over the send/recv-only archetype.

#include <boost/test/unit_test.hpp>

#include <gcl/error.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>
#if defined(GCL_TEST_TCP)
#include <gcl/transport/tcp.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ostream>
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

/// Like `run`, over every transport: inproc, the archetype, counting<inproc_transport> and,
/// where the test is built with GCL_TEST_TCP, TCP over loopback. Each is a new world, so `f`
/// should sweep its cases inside one call rather than be called once per case.
template <class F>
void run_everywhere(int p, std::string const& context, F f) {
  auto check = [&](std::vector<std::string> const& errors, char const* over) {
    for (int r = 0; r < p; ++r)
      BOOST_TEST(errors[static_cast<std::size_t>(r)].empty(),
                 context << over << " rank " << r << ": " << errors[static_cast<std::size_t>(r)]);
  };
  run(p, context, f);
  check(gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, f), " (counting)");
#if defined(GCL_TEST_TCP)
  gcl::tcp_options o;
  o.timeout = std::chrono::seconds{30};
  check(gcl::spawn<gcl::tcp_transport>(p, f, o), " (tcp)");
#endif
}

/// Runs f on p ranks over `Transport`, expecting spawn to rethrow a transport_error of code
/// mismatch; returns what() ("" and a failed check if nothing or something else was thrown).
template <class Transport, class F>
std::string expect_mismatch_over(int p, F f) {
  typename Transport::options o;
  o.timeout = std::chrono::seconds{20};
  try {
    gcl::spawn<Transport>(p, f, o);
  } catch (gcl::transport_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::mismatch), "P=" << p << ": " << e.what());
    return e.what();
  }
  BOOST_TEST(false, "P=" << p << ": ranks passing different counts did not fail");
  return "";
}

/// Counts of a variable-count collective on p ranks to sweep: all zero, equal, rank r's r
/// (rank 0 has none), several ranks with none, and one large block among small ones.
inline std::vector<std::vector<std::size_t>> count_patterns(int p) {
  auto const up = static_cast<std::size_t>(p);
  std::vector<std::vector<std::size_t>> all(5, std::vector<std::size_t>(up));
  for (std::size_t r = 0; r < up; ++r) {
    all[0][r] = 0;
    all[1][r] = 3;
    all[2][r] = r;
    all[3][r] = r % 3 == 1 ? 0 : 2 * r + 1;
    all[4][r] = r == up / 2 ? 1001 : r % 2;
  }
  return all;
}

/// "{0, 3, 1}", for contexts.
inline std::string text(std::vector<std::size_t> const& counts) {
  std::string s = "{";
  for (std::size_t i = 0; i < counts.size(); ++i)
    s += (i == 0 ? "" : ", ") + std::to_string(counts[i]);
  return s + "}";
}

/// What a non-commutative (associative) operator is tested with, exactly: affine maps
/// x -> a x + b, combined by `compose` (f, then g), which is not commutative.
struct affine {
  std::int64_t a = 1, b = 0;
  bool operator==(affine const&) const = default;
};
inline std::ostream& operator<<(std::ostream& s, affine const& f) {
  return s << "(" << f.a << ", " << f.b << ")";
}
struct compose {
  affine operator()(affine const& f, affine const& g) const { return {g.a * f.a, g.a * f.b + g.b}; }
};
/// Element i of rank r's data: a in {1, 2}, so that P <= 8 compositions stay small.
inline affine affine_value(int r, std::size_t i) {
  return {r % 2 + 1, static_cast<std::int64_t>(r) + static_cast<std::int64_t>(i % 5)};
}

}  // namespace gcl_test
