#define BOOST_TEST_MODULE algorithm_automatic
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/automatic.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "accounting.hpp"

using namespace accounting;
using choice = gcl::automatic::choice;

// What `f` writes to stderr.
template <class F>
std::string capture_stderr(F f) {
  std::string const path = "automatic_capture_" + std::to_string(::getpid()) + ".log";
  std::fflush(stderr);
  int const saved = ::dup(2);
  BOOST_REQUIRE(std::freopen(path.c_str(), "w", stderr) != nullptr);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

// First in the file: GCL_DEBUG is read once, at the first decision of the process.
BOOST_AUTO_TEST_CASE(gcl_debug_logs_each_decision_once_per_size_class) {
  ::setenv("GCL_DEBUG", "1", 1);
  gcl::automatic const a{};
  // 1000 and 1020 int64 (8000 and 8160 bytes) are one size class, [4096, 8192); 3 another.
  std::string const log = capture_stderr([&] {
    for (std::size_t n : {std::size_t{1000}, std::size_t{1020}, std::size_t{3}, std::size_t{1000}})
      run<std::int64_t>(4, n, gcl::sum{}, a, value);
  });
  std::size_t lines = 0;
  for (char c : log) lines += c == '\n';
  BOOST_TEST(lines == 2u, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[4096,8192) -> ") != std::string::npos, log);
  BOOST_TEST(log.find("gcl: automatic: P=4 bytes=[16,32) -> ") != std::string::npos, log);
}

std::size_t count_of(std::string const& text, std::string const& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr double every = std::numeric_limits<double>::infinity();

// The calls a tuned automatic spends trying candidates for this shape.
int trial_calls(gcl::automatic const& a, int p, std::size_t n, std::size_t size, bool comm) {
  if (p == 1 || n == 0) return 0;
  return a.trials * static_cast<int>(a.candidates(p, n, size, comm).size());
}

struct tuned_result {
  std::vector<int> wrong;                  // per rank: calls whose result was not exact
  std::vector<gcl::transport_stats> last;  // per rank: the last call alone
};

// `calls` sum all_reduces of `n` int64 with `a` on P ranks under counting; call c adds c to
// every input, and each result is compared on the rank with the oracle computed there.
tuned_result run_tuned_sum(gcl::automatic const& a, int p, std::size_t n, int calls) {
  auto out = gcl::spawn<counted>(p, [&](auto& comm) {
    int wrong = 0;
    gcl::transport_stats last;
    for (int c = 0; c < calls; ++c) {
      auto make = [c](int r, std::size_t i) { return value(r, i) + c; };
      std::vector<std::int64_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = make(comm.rank(), i);
      if (c == calls - 1) comm.transport().reset();  // between calls: nothing in flight to us
      gcl::all_reduce(comm, v, gcl::sum{}, a);
      if (c == calls - 1) last = comm.transport().stats();
      wrong += v != expected_sum<std::int64_t>(comm.size(), n, make);
    }
    return std::pair(wrong, last);
  });
  tuned_result r;
  for (auto& [w, s] : out) {
    r.wrong.push_back(w);
    r.last.push_back(s);
  }
  return r;
}

BOOST_AUTO_TEST_CASE(gcl_debug_logs_each_tuned_decision_once_with_its_trial_times) {
  ::setenv("GCL_DEBUG", "1", 1);
  gcl::automatic const a{.trials = 2, .shortlist = every};
  std::string const log = capture_stderr([&] {
    for (std::size_t n : {std::size_t{1000}, std::size_t{3}}) {
      int const calls = trial_calls(a, 3, n, 8, true) + 3;
      auto r = run_tuned_sum(a, 3, n, calls);
      for (int w : r.wrong) BOOST_TEST(w == 0);
    }
  });
  BOOST_TEST(count_of(log, " tuned -> ") == 2u, log);
  BOOST_TEST(count_of(log, "gcl: automatic: P=3 bytes=[4096,8192) element=8 tuned -> ") == 1u, log);
  BOOST_TEST(count_of(log, "gcl: automatic: P=3 bytes=[16,32) element=8 tuned -> ") == 1u, log);
  BOOST_TEST(count_of(log, "tree ") >= 2u, log);  // every candidate's trial times are listed
}

BOOST_AUTO_TEST_CASE(tuning_is_exact_through_the_trials_and_every_rank_settles_on_one_choice) {
  for (int p : {1, 2, 3, 4, 5, 8})
    for (std::size_t n : {std::size_t{0}, static_cast<std::size_t>(p + 1), std::size_t{1000}}) {
      gcl::automatic const a{.trials = 2, .shortlist = every};
      int const trials = trial_calls(a, p, n, 8, true);
      if (p > 1 && n > 0) BOOST_TEST(trials == 2 * (p > 1 ? 6 : 0));  // every algorithm, twice
      // Before the last trial no rank has settled; after it every rank has, on the same one.
      auto r = run_tuned_sum(a, p, n, std::max(trials - 1, 0));
      for (int w : r.wrong) BOOST_TEST(w == 0, "P=" << p << " n=" << n);
      if (trials > 0)
        for (int k = 0; k < p; ++k) BOOST_TEST(!a.tuned_choice(k, p, n, 8, true).has_value());
      r = run_tuned_sum(a, p, n, 3);  // the same object: the last trial, then two settled calls
      for (int w : r.wrong) BOOST_TEST(w == 0, "P=" << p << " n=" << n);
      auto const c0 = a.tuned_choice(0, p, n, 8, true);
      BOOST_TEST_REQUIRE(c0.has_value(), "P=" << p << " n=" << n);
      for (int k = 1; k < p; ++k)
        BOOST_TEST((a.tuned_choice(k, p, n, 8, true) == c0), "P=" << p << " n=" << n);
      if (trials == 0) BOOST_TEST((*c0 == a.choose(p, n, 8, true)));
      // A copy shares what was learned; another size class has not been tuned.
      gcl::automatic const copy = a;
      BOOST_TEST((copy.tuned_choice(p - 1, p, n, 8, true) == c0));
      if (trials > 0) BOOST_TEST(!copy.tuned_choice(0, p, 1 << 20, 8, true).has_value());
    }
}

BOOST_AUTO_TEST_CASE(tuning_never_tries_ring_for_a_non_commutative_operator) {
  gcl::automatic const a{.trials = 2, .shortlist = every};
  for (int p : {2, 3, 4, 5, 8}) {
    std::size_t const n = 7;
    auto const cands = a.candidates(p, n, sizeof(affine), false);
    BOOST_TEST(cands.size() == 5u);
    for (auto c : cands) BOOST_TEST((c != choice::ring));
    int const calls = trial_calls(a, p, n, sizeof(affine), false) + 2;
    auto out = gcl::spawn<counted>(p, [&](auto& comm) {
      int wrong = 0;
      for (int c = 0; c < calls; ++c) {
        std::vector<affine> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = affine_of(comm.rank(), i);
        gcl::all_reduce(comm, v, compose{}, a);
        wrong += v != expected_composition(comm.size(), n);
      }
      return wrong;
    });
    for (int w : out) BOOST_TEST(w == 0, "P=" << p);
    auto c = a.tuned_choice(0, p, n, sizeof(affine), false);
    BOOST_TEST_REQUIRE(c.has_value());
    BOOST_TEST((*c != choice::ring));
  }
  // The shortlist: only what the model predicts within the factor, its pick first.
  gcl::automatic const narrow{.trials = 1, .shortlist = 1.0};
  auto const only = narrow.candidates(4, 1000, 4, true);
  BOOST_TEST(only.size() >= 1u);
  BOOST_TEST((only[0] == narrow.choose(4, 1000, 4, true)));
}

// The fixed algorithm `c` on a fresh group, one call, under counting.
run_result<std::int64_t> run_fixed(choice c, int p, std::size_t n) {
  switch (c) {
    case choice::tree:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::tree{}, value);
    case choice::ring:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::ring{}, value);
    case choice::recursive_doubling:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::recursive_doubling{}, value);
    case choice::halving_doubling:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::halving_doubling{}, value);
    case choice::direct:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::direct{}, value);
    case choice::parameter_server:
      return run<std::int64_t>(p, n, gcl::sum{}, gcl::parameter_server{}, value);
  }
  return {};
}

BOOST_AUTO_TEST_CASE(after_tuning_a_call_sends_exactly_what_the_chosen_algorithm_sends) {
  for (int p : {2, 3, 4, 7, 8})
    for (std::size_t n : {static_cast<std::size_t>(p), std::size_t{1000}}) {
      gcl::automatic const a{.trials = 1, .shortlist = every};
      auto r = run_tuned_sum(a, p, n, trial_calls(a, p, n, 8, true) + 1);
      for (int w : r.wrong) BOOST_TEST(w == 0);
      auto const c = a.tuned_choice(0, p, n, 8, true);
      BOOST_TEST_REQUIRE(c.has_value());
      auto const fixed = run_fixed(*c, p, n);
      for (int k = 0; k < p; ++k) {
        BOOST_TEST(r.last[k].messages_sent == fixed.per_rank[k].messages_sent,
                   "P=" << p << " n=" << n << " rank " << k);
        BOOST_TEST(r.last[k].bytes_sent == fixed.per_rank[k].bytes_sent);
        BOOST_TEST((r.last[k].sent_sizes == fixed.per_rank[k].sent_sizes));
      }
      // A trial call also agrees its time: one more double per tree edge.
      gcl::automatic const fresh{.trials = 1, .shortlist = every};
      auto t = run_tuned_sum(fresh, p, n, 1);
      auto const first = run_fixed(fresh.candidates(p, n, 8, true)[0], p, n);
      BOOST_TEST(t.last[0].messages_sent > first.per_rank[0].messages_sent);
    }
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
