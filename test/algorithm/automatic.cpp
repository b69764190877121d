#define BOOST_TEST_MODULE algorithm_automatic
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/automatic.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "accounting.hpp"

using namespace accounting;
using choice = gcl::automatic::choice;

// First in the file: GCL_DEBUG is read once, at the first decision of the process.
BOOST_AUTO_TEST_CASE(gcl_debug_logs_each_decision_once_per_size_class) {
  ::setenv("GCL_DEBUG", "1", 1);
  std::string const path = "automatic_debug_" + std::to_string(::getpid()) + ".log";
  std::fflush(stderr);
  int const saved = ::dup(2);
  BOOST_REQUIRE(std::freopen(path.c_str(), "w", stderr) != nullptr);
  gcl::automatic const a{};
  // 1000 and 1020 int64 (8000 and 8160 bytes) are one size class, [4096, 8192); 3 another.
  for (std::size_t n : {std::size_t{1000}, std::size_t{1020}, std::size_t{3}, std::size_t{1000}})
    run<std::int64_t>(4, n, gcl::sum{}, a, value);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  std::string const log = text.str();
  std::size_t lines = 0;
  for (char c : log) lines += c == '\n';
  BOOST_TEST(lines == 2u, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[4096,8192) -> ") != std::string::npos, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[16,32) -> ") != std::string::npos, log);
}

BOOST_AUTO_TEST_CASE(every_choice_is_exact_for_a_non_commutative_operator) {
  // Models that make each algorithm but ring (excluded: it reorders) the cheapest.
  gcl::automatic const latency_bound{.model = {.alpha = 1e-5, .beta = 1e-12, .gamma = 0}};
  gcl::automatic const bandwidth_bound{.model = {.alpha = 1e-9, .beta = 1e-8, .gamma = 1e-9}};
  for (auto const& a : {latency_bound, bandwidth_bound})
    for (int p = 1; p <= 9; ++p)
      for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{300}}) {
        BOOST_TEST((a.choose(p, n, sizeof(affine), false) != choice::ring));
        auto r = run<affine>(p, n, compose{}, a, affine_of);
        auto e = expected_composition(p, n);
        for (int k = 0; k < p; ++k) BOOST_TEST((r.data[k] == e), "P=" << p << " n=" << n);
      }
}

BOOST_AUTO_TEST_CASE(picks_ring_for_large_commutative_reductions_when_links_are_separate) {
  // A network-like model: ring and halving-doubling move the least data per rank; with a
  // large per-round latency and many ranks, halving-doubling's 2 log2 P rounds beat the ring's
  // 2(P-1), and with no latency at all they tie and the ring (earlier in the list) wins.
  gcl::automatic const net{.model = {.alpha = 0, .beta = 1e-9, .gamma = 1e-10}};
  BOOST_TEST((net.choose(8, 1 << 20, 4, true) == choice::ring));
  gcl::automatic const slow{.model = {.alpha = 1e-4, .beta = 1e-9, .gamma = 1e-10}};
  BOOST_TEST((slow.choose(8, 1 << 20, 4, true) == choice::halving_doubling));
  // Threads sharing one core: total work decides, and the tree has the fewest rounds of the
  // algorithms that move the least in total.
  gcl::automatic const one_core{
      .model = {.alpha = 1e-7, .beta = 1e-10, .gamma = 1e-10, .latency = 4e-6, .parallelism = 1}};
  auto c = one_core.choose(4, 1 << 22, 4, true);
  BOOST_TEST((c == choice::tree || c == choice::parameter_server));
  BOOST_TEST(gcl::automatic::choice_names[static_cast<std::size_t>(choice::direct)] == "direct");
}
