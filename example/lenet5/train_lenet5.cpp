// train_lenet5: distributed SGD for LeNet-5 on MNIST over gcl (doc/homework.md, Task 3).
//
//   tools/fetch-mnist.sh
//   train_lenet5 --world-size 4 --algorithm ring --sync params --target-accuracy 0.97
//
// Ranks are threads (--transport inproc, the default) or processes under a launcher such as
// tools/gcl-launch (--transport shm within one host, tcp across hosts; the rule of
// example/common/transports.hpp). Prints a progress line, one line per evaluation, and k*
// (iterations to the target accuracy) with the seconds it took. `--sync grads --overlap`
// all-reduces the gradient buckets (--bucket-kib) during the backward pass, as DDP does, and
// says how much of that communication the backward pass hid.

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "blas_threads.hpp"
#include "common/cli.hpp"
#include "common/transports.hpp"

#include "trainer.hpp"

#ifndef LENET5_DEFAULT_DATA
#define LENET5_DEFAULT_DATA "data/mnist"
#endif

namespace {

// With --json: the JSON result goes to the real stdout, everything else to stderr.
std::FILE* json_out = nullptr;

// The names of `algorithm_list`, for CLI::IsMember.
std::vector<std::string> algorithm_name_list() {
  std::vector<std::string> v;
  std::apply([&](auto... a) { (v.emplace_back(a.name), ...); }, lenet5::algorithm_list{});
  return v;
}

// Ranks that ran in this process (threads) must end with the very same parameters: gcl's
// all_reduce gives every rank the same bits. False, after naming the first rank that differs.
bool same_final_parameters(std::vector<lenet5::train_result> const& results) {
  for (std::size_t r = 1; r < results.size(); ++r)
    if (results[r].parameters != results[0].parameters) {
      std::fprintf(stderr, "train_lenet5: final parameters of rank %zu differ from rank 0\n", r);
      return false;
    }
  return true;
}

void summary(lenet5::train_config const& cfg, int world, lenet5::train_result const& r) {
  if (r.k_star >= 0)
    std::printf(
        "k* = %ld iterations to %.2f%% test accuracy (%ld images per rank), %.1f s "
        "(%.1f s training)\n",
        r.k_star, 100 * cfg.target_accuracy, r.k_star * cfg.batch, r.seconds_to_target,
        r.train_seconds);
  else if (cfg.target_accuracy > 0)
    std::printf("target %.2f%% not reached in %ld iterations (best %.2f%%)\n",
                100 * cfg.target_accuracy, r.iterations, [&] {
                  double b = 0;
                  for (auto& e : r.evaluations) b = std::max(b, 100 * e.accuracy);
                  return b;
                }());
  std::printf(
      "throughput %.0f images/s (%d x batch %d); rank 0 step time: compute %.2f s, "
      "all_reduce %.2f s%s",
      r.images_per_second, world, cfg.batch, r.compute_seconds, r.comm_seconds,
      cfg.split_wait ? "" : " (including waiting for the slowest rank)");
  if (cfg.split_wait) std::printf(", waiting for the slowest rank %.2f s", r.wait_seconds);
  std::printf(": %.1f%% communication\n", 100 * r.comm_share);
  if (cfg.sync == "grads")
    std::printf(
        "gradient all_reduce in %zu bucket%s of at most %zu KiB, %s: ran %.3f s, the steps "
        "waited %.3f s for it: %.1f%% hidden\n",
        r.buckets, r.buckets == 1 ? "" : "s", cfg.bucket_kib,
        cfg.overlap ? "overlapped with the backward pass" : "blocking", r.comm_run_seconds,
        r.comm_exposed_seconds, 100 * r.comm_hidden_share);
  double acc = r.evaluations.empty() ? 0 : r.evaluations.back().accuracy;
  if (json_out) {
    nlohmann::ordered_json j = {{"world_size", world},
                                {"algorithm", cfg.algorithm},
                                {"sync", cfg.sync},
                                {"overlap", cfg.overlap},
                                {"bucket_kib", cfg.bucket_kib},
                                {"buckets", r.buckets},
                                {"optimizer", cfg.optimizer},
                                {"lr", cfg.lr},
                                {"batch", cfg.batch},
                                {"target_accuracy", cfg.target_accuracy},
                                {"k_star", r.k_star},
                                {"seconds", r.k_star >= 0 ? r.seconds_to_target : r.seconds},
                                {"train_seconds", r.train_seconds},
                                {"iterations", r.iterations},
                                {"images_per_second", r.images_per_second},
                                {"comm_share", r.comm_share},
                                {"wait_share", r.wait_share},
                                {"compute_seconds", r.compute_seconds},
                                {"comm_seconds", r.comm_seconds},
                                {"wait_seconds", r.wait_seconds},
                                {"comm_run_seconds", r.comm_run_seconds},
                                {"comm_exposed_seconds", r.comm_exposed_seconds},
                                {"comm_hidden_seconds", r.comm_hidden_seconds},
                                {"comm_hidden_share", r.comm_hidden_share},
                                {"accuracy", acc},
                                {"evaluations", nlohmann::ordered_json::array()}};
    for (auto const& e : r.evaluations)
      j["evaluations"].push_back({{"iteration", e.iteration},
                                  {"epoch", e.epoch},
                                  {"seconds", e.seconds},
                                  {"train_seconds", e.train_seconds},
                                  {"train_loss", e.train_loss},
                                  {"test_loss", e.test_loss},
                                  {"accuracy", e.accuracy}});
    std::fprintf(json_out, "%s\n", j.dump().c_str());
    std::fflush(json_out);
  }
  std::printf(
      "RESULT world_size=%d k_star=%ld seconds=%.3f train_seconds=%.3f iterations=%ld "
      "images_per_second=%.1f comm_share=%.4f wait_share=%.4f compute_seconds=%.3f "
      "comm_seconds=%.3f wait_seconds=%.3f comm_run_seconds=%.3f comm_exposed_seconds=%.3f "
      "comm_hidden_share=%.4f accuracy=%.4f\n",
      world, r.k_star, r.k_star >= 0 ? r.seconds_to_target : r.seconds, r.train_seconds,
      r.iterations, r.images_per_second, r.comm_share, r.wait_share, r.compute_seconds,
      r.comm_seconds, r.wait_seconds, r.comm_run_seconds, r.comm_exposed_seconds,
      r.comm_hidden_share, acc);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Distributed SGD for LeNet-5 on MNIST over gcl"};
  gcl_cli::setup(app, "train_lenet5");
  app.option_defaults()->always_capture_default();
  lenet5::train_config cfg;
  int world = 1, threads = 1, timeout_s = 120;
  std::string transport, data_dir = LENET5_DEFAULT_DATA;
  bool quiet = false, json = false;
  app.add_option("-p,--world-size", world,
                 "number of ranks (threads when started alone; under a launcher: the launcher's)")
      ->check(CLI::Range(1, 1024));
  gcl_cli::add_transport_option(app, transport);
  app.add_option("-a,--algorithm", cfg.algorithm,
                 "all_reduce algorithm: " + lenet5::algorithm_names())
      ->check(CLI::IsMember(algorithm_name_list()));
  app.add_option("--sync", cfg.sync,
                 "params: average parameters after a local step (the homework's Algorithm 1); "
                 "grads: average gradients, then step (DDP)")
      ->check(CLI::IsMember({"params", "grads"}));
  auto* bucket_opt =
      app.add_option("--bucket-kib", cfg.bucket_kib,
                     "--sync grads: all_reduce the gradients in buckets of at most this many KiB, "
                     "layers in reverse order, a layer never split (DDP's bucket_cap_mb); 242 or "
                     "more: one bucket")
          ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  app.add_flag("--overlap", cfg.overlap,
               "--sync grads: start each bucket's non-blocking all_reduce as soon as the backward "
               "pass has computed it, as DDP does (same result as without)");
  app.add_flag("--pool", cfg.pool,
               "shm and auto: the parameter and gradient arenas in the transport's pool, which the "
               "host's other ranks read in place (doc/shm.md; sizes the pool unless "
               "GCL_SHM_POOL_BYTES is set)");
  app.add_option("--optimizer", cfg.optimizer, "sgd, momentum, sign, adam, adam_simplified")
      ->check(CLI::IsMember({"sgd", "momentum", "sign", "adam", "adam_simplified"}));
  app.add_option("--lr", cfg.lr, "learning rate (step size alpha)")->check(CLI::Range(1e-9f, 1e3f));
  app.add_option("--momentum", cfg.momentum, "mu of --optimizer momentum")
      ->check(CLI::Range(0.0f, 0.999999f));
  app.add_flag("--l1-scale", cfg.l1_scale, "sign: step lr*||g||_1 (exact L-inf steepest descent)");
  app.add_option("--batch", cfg.batch, "images per rank per iteration")
      ->check(CLI::Range(1, 60000));
  app.add_option("--seed", cfg.seed, "initialisation and shuffling seed");
  app.add_option("--target-accuracy", cfg.target_accuracy,
                 "stop at the first evaluation with at least this test accuracy (0 = never)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--eval-every", cfg.eval_every, "iterations between evaluations")
      ->check(CLI::Range(1L, 1000000000L));
  app.add_option("--max-iterations", cfg.max_iterations, "stop after this many iterations")
      ->check(CLI::Range(1L, 1000000000L));
  app.add_option("--eval-images", cfg.eval_images, "test images per evaluation (-1 = all 10000)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            long n = 0;
            auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc{} || end != v.data() + v.size() || n == 0 || n < -1 || n > 10000)
              return "Value " + v + " is not -1 (all) or in range 1 to 10000";
            return {};
          },
          "-1 or 1..10000"));
  app.add_option("--log", cfg.log, "CSV file of every evaluation");
  app.add_option("--data", data_dir, "directory with the four MNIST-format IDX files");
  app.add_option("--threads", threads, "OpenBLAS threads (shared by all ranks of the process)")
      ->check(CLI::Range(1, 256));
  app.add_option("--timeout", timeout_s, "seconds any collective may wait before failing")
      ->check(CLI::Range(1, 86400 * 7));
  app.add_flag("--split-wait", cfg.split_wait,
               "barrier before each all_reduce: report waiting for the slowest rank apart");
  app.add_flag("-q,--quiet", quiet, "no progress line (evaluations are still printed)");
  app.add_flag("--json", json,
               "print the result as one JSON object on stdout (rank 0), everything else on "
               "stderr");
  GCL_CLI_PARSE(app, argc, argv);
  cfg.progress = !quiet;
  if (cfg.sync != "grads" && (cfg.overlap || bucket_opt->count() > 0))
    return gcl_cli::usage_error(app,
                                std::string(cfg.overlap ? "--overlap" : "--bucket-kib") +
                                    " needs --sync grads (it is about the gradients' all_reduce)");

  // Under a launcher of more than one rank: processes, never one world of threads per process.
  auto const job = gcl_cli::launcher_world();
  if (auto why =
          gcl_cli::resolve_transport(transport, job, world, app.count("--world-size") > 0, "train");
      !why.empty())
    return gcl_cli::usage_error(app, why);
  if (json) {  // stdout keeps only the JSON: the human lines go to stderr
    std::fflush(stdout);
    int const fd = ::dup(STDOUT_FILENO);
    if (fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
        (json_out = ::fdopen(fd, "w")) == nullptr) {
      std::perror("train_lenet5: --json");
      return 2;
    }
  }
  // Room for both arenas, each rounded up to 64 bytes, and more.
  if (cfg.pool)
    if (auto why = gcl_cli::use_pool(transport, std::size_t{4} << 20); !why.empty())
      return gcl_cli::usage_error(app, why);

  // Ranks are threads on few cores: BLAS must not start threads of its own per call.
  lenet5::set_blas_threads(threads);

  try {
    auto const data = lenet5::load_mnist(data_dir);
    std::string const how = std::string(job ? "processes" : "threads") +
                            (transport == "inproc" ? " of this process"
                             : transport == "shm"  ? " over shared memory"
                             : transport == "tcp"  ? " over tcp"
                                                   : ", shared memory within a host, tcp between");
    std::string sync = cfg.sync;
    if (cfg.sync == "grads") {
      auto const n = lenet5::make_buckets(lenet5::network<float>::layer_parameters,
                                          cfg.bucket_kib * 1024, sizeof(float))
                         .size();
      sync += " (" + std::to_string(n) + " bucket" + (n == 1 ? "" : "s") + " of at most " +
              std::to_string(cfg.bucket_kib) + " KiB" + (cfg.overlap ? ", overlapped" : "") + ")";
    }
    auto header = [&](int n) {
      std::printf(
          "train_lenet5: %d rank%s (%s), all_reduce %s, sync %s, optimizer %s, lr %g, batch %d "
          "per rank, %zu parameters\n",
          n, n == 1 ? "" : "s", how.c_str(), cfg.algorithm.c_str(), sync.c_str(),
          cfg.optimizer.c_str(), double(cfg.lr), cfg.batch,
          lenet5::network<float>::parameter_count);
    };
    if (!job) header(world);
    auto const results =
        gcl_cli::run_ranks(transport, job, world, std::chrono::seconds{timeout_s}, [&](auto& comm) {
          if (job && comm.rank() == 0) header(comm.size());
          return lenet5::train(comm, data, cfg);
        });
    if (job) {  // this process is one rank; rank 0 speaks for the job
      if (job->rank == 0) {
        std::printf("final parameters of rank 0: hash %016llx\n",
                    static_cast<unsigned long long>(lenet5::parameter_hash(results[0].parameters)));
        summary(cfg, job->size, results[0]);
      }
    } else {
      if (!same_final_parameters(results)) return 2;
      std::printf("final parameters bit-identical on all %d rank(s) (hash %016llx)\n", world,
                  static_cast<unsigned long long>(lenet5::parameter_hash(results[0].parameters)));
      summary(cfg, world, results[0]);
    }
    return results[0].k_star >= 0 || cfg.target_accuracy == 0 ? 0 : 1;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "train_lenet5: %s\n", e.what());
    return 2;
  }
}
