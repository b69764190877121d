#define BOOST_TEST_MODULE cost_model
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/automatic.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/cost_model.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace tt = boost::test_tools;

namespace {
// Closed forms written out here, independently of the schedules in the library, for P a power
// of two that divides p (bytes): doc/algorithms.md's table.
double lg(int p) {
  return std::log2(static_cast<double>(p));
}
}  // namespace

BOOST_AUTO_TEST_CASE(predictions_equal_the_closed_forms) {
  gcl::cost_model const m{.alpha = 1e-5, .beta = 1e-9, .gamma = 3e-10};
  double const a = m.alpha, b = m.beta, g = m.gamma;
  for (int p : {2, 4, 8, 16}) {
    double const n = 1 << 20;  // bytes, divisible by every p here
    BOOST_TEST(m.predict(gcl::tree{}, p, 1 << 20) == 2 * lg(p) * (a + n * b) + lg(p) * n * g,
               tt::tolerance(1e-12));
    BOOST_TEST(
        m.predict(gcl::ring{}, p, 1 << 20) == 2 * (p - 1) * (a + n / p * b) + (p - 1) * n / p * g,
        tt::tolerance(1e-12));
    BOOST_TEST(m.predict(gcl::direct{}, p, 1 << 20) == (p - 1) * (a + n * b) + (p - 1) * n * g,
               tt::tolerance(1e-12));
    BOOST_TEST(m.predict(gcl::parameter_server{}, p, 1 << 20) ==
                   2 * (p - 1) * (a + n * b) + (p - 1) * n * g,
               tt::tolerance(1e-12));
    BOOST_TEST(m.predict(gcl::recursive_doubling{}, p, 1 << 20) == lg(p) * (a + n * b + n * g),
               tt::tolerance(1e-12));
    // Halving-doubling: 2 log2 P latencies, 2 (P-1)/P n bytes on the wire, (P-1)/P n reduced.
    BOOST_TEST(m.predict(gcl::halving_doubling{}, p, 1 << 20) ==
                   2 * lg(p) * a + 2.0 * (p - 1) / p * n * b + 1.0 * (p - 1) / p * n * g,
               tt::tolerance(1e-12));
  }
  BOOST_TEST(m.predict(gcl::ring{}, 1, 1000) == 0.0);
  BOOST_TEST(m.predict(gcl::tree{}, 1, 1000) == 0.0);
}

BOOST_AUTO_TEST_CASE(latency_per_round_and_brents_bound) {
  // latency: once per round. Tree on 8 ranks: 6 rounds of one message.
  gcl::cost_model const l{.alpha = 1e-6, .beta = 0, .gamma = 0, .latency = 1e-5};
  BOOST_TEST(l.predict(gcl::tree{}, 8, 0) == 6 * (1e-5 + 1e-6), tt::tolerance(1e-12));
  // direct: one round in which each rank handles 7 messages.
  BOOST_TEST(l.predict(gcl::direct{}, 8, 0) == 1e-5 + 7 * 1e-6, tt::tolerance(1e-12));
  // parallelism 1: every rank's work is serialised, so the ring's 4 ranks take 4x its span;
  // the tree's reduce levels have 2 and 1 senders, its broadcast levels 1 and 2.
  gcl::cost_model const w{.alpha = 0, .beta = 1e-9, .gamma = 1e-9, .parallelism = 1};
  double const n = 4096;
  double const ring_span = 6 * (n / 4) * 1e-9 + 3 * (n / 4) * 1e-9;
  BOOST_TEST(w.predict(gcl::ring{}, 4, 4096) == 4 * ring_span, tt::tolerance(1e-12));
  double const tree_work = (2 + 1) * (2 * n * 1e-9) + (1 + 2) * (n * 1e-9);
  BOOST_TEST(w.predict(gcl::tree{}, 4, 4096) == tree_work, tt::tolerance(1e-12));
  // parallelism >= P: the span alone.
  gcl::cost_model const wide{.alpha = 0, .beta = 1e-9, .gamma = 1e-9, .parallelism = 4};
  BOOST_TEST(wide.predict(gcl::ring{}, 4, 4096) == ring_span, tt::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(homework_crossover_tree_vs_ring) {
  // doc/homework.md, Task 2, Step 3: tree 2 log2 N (t + D/b), ring 2 (N-1)(t + D/(N b));
  // without reduction cost, they are equal at D* = t b (N - 1 - log2 N) / (log2 N - (N - 1)/N).
  gcl::cost_model const m{.alpha = 2e-5, .beta = 1e-9, .gamma = 0};
  for (int n : {4, 8, 16}) {
    double const dstar = m.alpha / m.beta * (n - 1 - lg(n)) / (lg(n) - (n - 1.0) / n);
    auto d = static_cast<std::size_t>(dstar) / n * n;
    BOOST_TEST(m.predict(gcl::tree{}, n, d / 2) < m.predict(gcl::ring{}, n, d / 2));
    BOOST_TEST(m.predict(gcl::tree{}, n, 2 * d) > m.predict(gcl::ring{}, n, 2 * d));
  }
}

BOOST_AUTO_TEST_CASE(automatic_picks_the_least_predicted_and_respects_commutativity) {
  gcl::automatic const a{.model = {.alpha = 2e-5, .beta = 1e-9, .gamma = 1e-10}};
  using c = gcl::automatic::choice;
  // Tiny: latency dominates, so the fewest rounds win (recursive doubling: log2 P).
  BOOST_TEST((a.choose(8, 1, 4, true) == c::recursive_doubling));
  // Huge: bandwidth dominates; ring and halving-doubling move the same bytes, and
  // halving-doubling has fewer rounds.
  BOOST_TEST((a.choose(8, 1 << 24, 4, true) == c::halving_doubling));
  for (int p = 1; p <= 16; ++p)
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{1} << 22}) {
      auto t = a.predictions(p, n, 4);
      auto best = a.choose(p, n, 4, false);
      BOOST_TEST((best != c::ring));
      for (std::size_t i = 0; i < t.size(); ++i)
        if (static_cast<c>(i) != c::ring) BOOST_TEST(t[static_cast<std::size_t>(best)] <= t[i]);
    }
}

BOOST_AUTO_TEST_CASE(automatic_runs_the_choice_and_every_rank_agrees) {
  using counted = gcl::counting<gcl::inproc_transport>;
  // A model under which each size picks a different algorithm on 6 ranks; the model alone
  // decides (no measured tuning), so the counts are exactly those of the model's choice.
  gcl::automatic const a{.model = {.alpha = 2e-5, .beta = 1e-9, .gamma = 1e-10}, .trials = 0};
  for (int p : {1, 2, 3, 6, 8})
    for (std::size_t n : {std::size_t{0}, std::size_t{3}, std::size_t{5000}, std::size_t{200000}}) {
      auto out = gcl::spawn<counted>(p, [&](auto& comm) {
        std::vector<std::int64_t> v(n);
        for (std::size_t i = 0; i < n; ++i)
          v[i] = comm.rank() * 3 + static_cast<std::int64_t>(i % 5);
        gcl::all_reduce(comm, v, gcl::sum{}, a);
        return std::pair(v, comm.transport().stats());
      });
      gcl::transport_stats total;
      for (int r = 0; r < p; ++r) {
        total += out[r].second;
        for (std::size_t i = 0; i < n; ++i)
          if (out[r].first[i] != 3 * p * (p - 1) / 2 + p * static_cast<std::int64_t>(i % 5)) {
            BOOST_ERROR("wrong result P=" << p << " n=" << n << " rank " << r << " i " << i);
            break;
          }
      }
      // The counts are those of the algorithm it says it chose.
      auto choice = a.choose(p, n, sizeof(std::int64_t), true);
      std::uint64_t expected = 0;
      int const q = std::bit_floor(static_cast<unsigned>(p)),
                levels = std::countr_zero(unsigned(q));
      switch (choice) {
        case gcl::automatic::choice::tree:
          expected = 2u * (p - 1);
          break;
        case gcl::automatic::choice::ring:
          expected = 2u * p * (p - 1);
          break;
        case gcl::automatic::choice::recursive_doubling:
          expected = q * levels + 2 * (p - q);
          break;
        case gcl::automatic::choice::halving_doubling:
          expected = 2 * q * levels + 2 * (p - q);
          break;
        case gcl::automatic::choice::direct:
          expected = 1u * p * (p - 1);
          break;
        case gcl::automatic::choice::parameter_server:
          expected = 2u * (p - 1);
          break;
      }
      BOOST_TEST(total.messages_sent == expected, "P=" << p << " n=" << n);
    }
}

BOOST_AUTO_TEST_CASE(calibrate_gives_every_rank_the_same_positive_model) {
  for (int p : {1, 2, 3, 4}) {
    auto models = gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) {
      return gcl::calibrate(comm, {.large_bytes = 1 << 16, .repetitions = 3});
    });
    for (auto const& m : models) {
      BOOST_TEST((m == models[0]));
      BOOST_TEST(m.alpha > 0.0);
      BOOST_TEST(m.beta > 0.0);
      BOOST_TEST(m.gamma > 0.0);
      BOOST_TEST(m.latency >= 0.0);
      if (p > 1) BOOST_TEST((m.parallelism >= 1.0 && m.parallelism <= p));
    }
  }
}
