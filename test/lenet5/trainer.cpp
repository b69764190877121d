// Tests of example/lenet5/trainer.hpp on synthetic data (no download): a short distributed run
// with 4 ranks over gcl keeps every rank's parameters bit-identical, learns, and the two
// synchronisation modes (parameter averaging, the homework's Algorithm 1; gradient averaging,
// DDP) give the same parameters for plain SGD up to float rounding, and gradient averaging
// overlapped with the backward pass (--overlap) gives the very bits of the blocking one.
#define BOOST_TEST_MODULE lenet5_trainer
#include <boost/test/unit_test.hpp>

#include "blas_threads.hpp"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gcl/transport/shm.hpp>

#include "trainer.hpp"

namespace {

struct blas_one_thread {
  blas_one_thread() { lenet5::set_blas_threads(1); }
};
BOOST_TEST_GLOBAL_FIXTURE(blas_one_thread);

// Class c is a bright 8 x 8 square at one of ten positions, plus noise.
lenet5::image_set synthetic(std::size_t n, std::uint64_t seed) {
  lenet5::image_set s;
  s.count = n, s.rows = 28, s.cols = 28;
  s.pixels.resize(n * 784);
  s.labels.resize(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < n; ++i) {
    int const c = int(rng() % 10);
    s.labels[i] = std::uint8_t(c);
    int const y0 = 2 + (c / 5) * 12, x0 = 1 + (c % 5) * 5;
    for (int y = 0; y < 28; ++y)
      for (int x = 0; x < 28; ++x) {
        bool on = y >= y0 && y < y0 + 8 && x >= x0 && x < x0 + 8;
        s.pixels[i * 784 + y * 28 + x] = std::uint8_t(on ? 200 + rng() % 56 : rng() % 40);
      }
  }
  return s;
}

lenet5::mnist const& data() {
  static lenet5::mnist const d{synthetic(512, 1), synthetic(100, 2)};
  return d;
}

lenet5::train_config small(std::string sync, std::string algorithm = "ring") {
  lenet5::train_config c;
  c.sync = std::move(sync);
  c.algorithm = std::move(algorithm);
  c.lr = 0.05f;
  c.batch = 8;
  c.max_iterations = 16;
  c.eval_every = 8;
  c.verbose = false;
  return c;
}

std::vector<lenet5::train_result> run(int world, lenet5::train_config const& c) {
  return gcl::spawn<gcl::inproc_transport>(
      world, [&](auto& comm) { return lenet5::train(comm, data(), c); });
}

}  // namespace

BOOST_AUTO_TEST_CASE(four_ranks_stay_bit_identical) {
  for (std::string alg : {"ring", "tree"})
    for (std::string sync : {"params", "grads"}) {
      BOOST_TEST_CONTEXT(alg << ", sync " << sync) {
        auto r = run(4, small(sync, alg));
        BOOST_TEST_REQUIRE(r.size() == 4u);
        for (int k = 1; k < 4; ++k) BOOST_TEST((r[k].parameters == r[0].parameters));
        BOOST_TEST(r[0].iterations == 16);
        BOOST_TEST(r[0].evaluations.size() == 2u);
        // Every rank saw the same evaluations (accuracy is all-reduced).
        BOOST_TEST(r[3].evaluations.back().accuracy == r[0].evaluations.back().accuracy);
      }
    }
}

BOOST_AUTO_TEST_CASE(it_learns) {
  auto c = small("params");
  c.max_iterations = 60;
  c.eval_every = 60;
  auto r = run(2, c);
  BOOST_TEST_MESSAGE("accuracy after 60 iterations: " << r[0].evaluations.back().accuracy);
  BOOST_TEST(r[0].evaluations.back().accuracy > 0.5);  // chance is 0.1
  BOOST_TEST(r[0].evaluations.back().train_loss < std::log(10.0));
}

BOOST_AUTO_TEST_CASE(target_accuracy_stops_and_reports_k_star) {
  auto c = small("grads");
  c.max_iterations = 200;
  c.eval_every = 4;
  c.target_accuracy = 0.3;
  auto r = run(2, c);
  BOOST_TEST(r[0].k_star > 0);
  BOOST_TEST(r[0].k_star % 4 == 0);
  BOOST_TEST(r[0].iterations == r[0].k_star);
  BOOST_TEST(r[0].evaluations.back().accuracy >= 0.3);
  for (std::size_t i = 0; i + 1 < r[0].evaluations.size(); ++i)
    BOOST_TEST(r[0].evaluations[i].accuracy < 0.3);
}

// For plain SGD, x - lr (1/N) sum_n G_n (grads) and (1/N) sum_n (x - lr G_n) (params) are the
// same number; only the rounding differs. Each step rounds differently by a few ulp of the
// parameters (|p| < 1: an ulp is < 1.2e-7), 16 steps at most accumulate ~1e-5 if nothing
// amplified it, and a short run with a small step amplifies little. A real difference (a
// missing division by N, a wrong step) is of the order of lr |G| ~ 1e-3 and fails this.
BOOST_AUTO_TEST_CASE(params_and_grads_agree_for_sgd) {
  auto p = run(4, small("params"));
  auto g = run(4, small("grads"));
  double worst = 0;
  for (std::size_t i = 0; i < p[0].parameters.size(); ++i)
    worst = std::max(worst, double(std::abs(p[0].parameters[i] - g[0].parameters[i])));
  BOOST_TEST_MESSAGE("largest difference between --sync params and --sync grads: " << worst);
  BOOST_TEST(worst < 2e-5);
  BOOST_TEST(worst > 0);  // not the same code path by accident
  // And training actually moved the parameters by much more than that.
  std::vector<float> init(lenet5::network<float>::parameter_count), grads(init.size());
  lenet5::network<float>(init, grads).init(small("params").seed);
  double moved = 0;
  for (std::size_t i = 0; i < init.size(); ++i)
    moved = std::max(moved, double(std::abs(p[0].parameters[i] - init[i])));
  BOOST_TEST(moved > 1e-3);
}

BOOST_AUTO_TEST_CASE(one_rank_params_equals_plain_sgd) {
  // With N = 1, both modes are plain SGD, and the all_reduce of one rank changes nothing.
  auto p = run(1, small("params"));
  auto g = run(1, small("grads"));
  BOOST_TEST((p[0].parameters == g[0].parameters));
}

// --sync grads all-reduces the gradients in buckets (64 KiB: 3, 1 KiB: one per layer, 1 MiB:
// the whole arena). The partition changes the rounding of a sum of 3 or more ranks, so every
// bucket size is its own run; all of them keep the ranks bit-identical.
BOOST_AUTO_TEST_CASE(bucket_sizes_round_differently) {
  std::vector<std::vector<float>> ends;
  for (std::size_t kib : {1, 64, 1024}) {
    BOOST_TEST_CONTEXT("--bucket-kib " << kib) {
      auto c = small("grads");
      c.bucket_kib = kib;
      auto r = run(4, c);
      BOOST_TEST(r[0].buckets == (kib == 1 ? 5u : kib == 64 ? 3u : 1u));
      for (int k = 1; k < 4; ++k) BOOST_TEST((r[k].parameters == r[0].parameters));
      ends.push_back(r[0].parameters);
    }
  }
  BOOST_TEST((ends[0] != ends[1]));
  BOOST_TEST((ends[1] != ends[2]));
}

// --overlap starts each bucket's iall_reduce from the backward pass; the blocking run reduces
// the same buckets one after the other. Same buckets, same algorithm: the same bits (and 3
// ranks, so that another partition would round differently, as the test above shows for 4).
BOOST_AUTO_TEST_CASE(overlap_gives_the_bits_of_the_blocking_buckets) {
  for (std::string alg : {"ring", "tree"})
    for (std::size_t kib : {1, 64, 1024}) {
      BOOST_TEST_CONTEXT(alg << ", --bucket-kib " << kib) {
        auto c = small("grads", alg);
        c.bucket_kib = kib;
        auto blocking = run(3, c);
        c.overlap = true;
        auto overlapped = run(3, c);
        for (int k = 0; k < 3; ++k)
          BOOST_TEST((overlapped[k].parameters == blocking[0].parameters));
        BOOST_TEST(overlapped[0].buckets == blocking[0].buckets);
        // What ran and what the steps waited for; blocking hides nothing.
        BOOST_TEST(overlapped[0].comm_run_seconds > 0);
        BOOST_TEST(overlapped[0].comm_exposed_seconds == overlapped[0].comm_seconds);
        BOOST_TEST(overlapped[0].comm_hidden_share >= 0);
        BOOST_TEST(overlapped[0].comm_hidden_share <= 1);
        BOOST_TEST(blocking[0].comm_run_seconds == blocking[0].comm_exposed_seconds);
        BOOST_TEST(blocking[0].comm_hidden_share == 0);
      }
    }
}

// The arenas in the shm pool (--pool): the same bits as in ordinary memory, and the arenas'
// large messages are read in place (counted); a transport without a pool refuses.
BOOST_AUTO_TEST_CASE(arenas_in_the_pool_give_the_same_bits) {
  gcl::shm_options o;
  o.pool_bytes = 1 << 20;
  o.pool_offer_bytes = o.offer_bytes;  // else, where each rank has a core, from 256 KiB
  o.timeout = std::chrono::seconds{60};
  for (std::string sync : {"params", "grads"}) {
    BOOST_TEST_CONTEXT("sync " << sync) {
      auto c = small(sync);
      c.bucket_kib = 1024;  // grads: the whole arena in one all_reduce, 120 KiB ring chunks
      auto train_shm = [&](bool pool) {
        c.pool = pool;
        return gcl::spawn<gcl::shm_transport>(
            2,
            [&](auto& comm) {
              auto r = lenet5::train(comm, data(), c);
              return std::make_pair(r.parameters, comm.transport().sent_from_pool());
            },
            o);
      };
      auto ordinary = train_shm(false);
      auto pooled = train_shm(true);
      for (int k = 0; k < 2; ++k) {
        BOOST_TEST((pooled[k].first == ordinary[0].first));
        BOOST_TEST(ordinary[k].second == 0u);
        BOOST_TEST(pooled[k].second > 0u);
      }
    }
  }
  auto c = small("params");
  c.pool = true;
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);  // inproc has no pool
}

BOOST_AUTO_TEST_CASE(bad_configuration) {
  auto c = small("params");
  c.sync = "both";
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);
  c = small("params", "no_such_algorithm");
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);
  c = small("params");
  c.batch = 1000;  // more than a rank's shard
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);
  c = small("grads");
  c.bucket_kib = 0;
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);
  c = small("params");
  c.overlap = true;  // only gradients are overlapped
  BOOST_CHECK_THROW(run(2, c), std::invalid_argument);
}
