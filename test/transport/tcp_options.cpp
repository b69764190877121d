// tcp_options: the job token that every launch path provides by default, and the default
// timeout. The environment cases set and unset real variables (from_env() reads getenv), each
// test restoring what it changed.
#define BOOST_TEST_MODULE transport_tcp_options
#include <boost/test/unit_test.hpp>

#include <sched.h>

#include <gcl/transport/tcp.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

// Every variable a launcher may set that from_env reads for the token.
char const* const launcher_vars[] = {
    "GCL_TOKEN",
    "TORCHELASTIC_RUN_ID",
    "PMIX_NAMESPACE",
    "OMPI_MCA_ess_base_jobid",
    "OMPI_MCA_orte_ess_jobid",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
};

// Sets the environment of one rank of one job for the test's lifetime: a world of one rank,
// no launcher variables but `vars`; restores the previous environment afterwards.
class job_env {
 public:
  explicit job_env(std::map<std::string, std::string> const& vars) {
    for (char const* n : launcher_vars) save_and_unset(n);
    for (char const* n : {"GCL_RANK", "GCL_WORLD_SIZE", "GCL_TIMEOUT"}) save_and_unset(n);
    ::setenv("GCL_RANK", "0", 1);
    ::setenv("GCL_WORLD_SIZE", "1", 1);
    for (auto const& [n, v] : vars) {
      if (!saved_.count(n)) save_and_unset(n.c_str());
      ::setenv(n.c_str(), v.c_str(), 1);
    }
  }
  job_env(job_env const&) = delete;
  job_env& operator=(job_env const&) = delete;
  ~job_env() {
    for (auto const& [n, v] : saved_) {
      if (v)
        ::setenv(n.c_str(), v->c_str(), 1);
      else
        ::unsetenv(n.c_str());
    }
  }

 private:
  void save_and_unset(char const* n) {
    char const* v = std::getenv(n);
    saved_[n] = v ? std::optional<std::string>(v) : std::nullopt;
    ::unsetenv(n);
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

struct token {
  std::string value, source;
};
token token_of(std::map<std::string, std::string> const& vars) {
  job_env env(vars);
  auto o = gcl::tcp_options::from_env();
  return {o.token, o.token_origin()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_launcher_gives_one_token_per_job) {
  struct launcher {
    std::string source;
    std::map<std::string, std::string> job_a, job_b;
  };
  std::vector<launcher> launchers = {
      {"TORCHELASTIC_RUN_ID", {{"TORCHELASTIC_RUN_ID", "a1b2"}}, {{"TORCHELASTIC_RUN_ID", "c3d4"}}},
      {"PMIX_NAMESPACE",
       {{"PMIX_NAMESPACE", "prterun-node01-4242@1"}},
       {{"PMIX_NAMESPACE", "prterun-node01-4243@1"}}},
      {"OMPI_MCA_ess_base_jobid",
       {{"OMPI_MCA_ess_base_jobid", "3938582529"}},
       {{"OMPI_MCA_ess_base_jobid", "3938648065"}}},
      {"OMPI_MCA_orte_ess_jobid",
       {{"OMPI_MCA_orte_ess_jobid", "1234567"}},
       {{"OMPI_MCA_orte_ess_jobid", "1234568"}}},
      // Two steps of one Slurm job are two jobs of ranks.
      {"SLURM_JOB_ID+SLURM_STEP_ID",
       {{"SLURM_JOB_ID", "777"}, {"SLURM_STEP_ID", "0"}},
       {{"SLURM_JOB_ID", "777"}, {"SLURM_STEP_ID", "1"}}},
      {"SLURM_JOB_ID", {{"SLURM_JOB_ID", "777"}}, {{"SLURM_JOB_ID", "778"}}},
  };
  std::vector<std::string> seen;
  for (auto const& l : launchers) {
    BOOST_TEST_CONTEXT(l.source) {
      auto a = token_of(l.job_a), a_again = token_of(l.job_a), b = token_of(l.job_b);
      BOOST_TEST(!a.value.empty());
      BOOST_TEST(a.source == l.source);
      BOOST_TEST(a.value == a_again.value);  // every rank of the job computes the same one
      BOOST_TEST(a.value != b.value);        // another job of the same launcher does not
      for (auto const& s : seen) BOOST_TEST(a.value != s);  // nor another launcher's job
      seen.push_back(a.value);
    }
  }
  // Equal numbers from two launchers are still two jobs.
  BOOST_TEST(token_of({{"SLURM_JOB_ID", "5"}}).value !=
             token_of({{"OMPI_MCA_ess_base_jobid", "5"}}).value);
}

BOOST_AUTO_TEST_CASE(gcl_token_wins_over_every_launcher) {
  auto t = token_of({{"GCL_TOKEN", "mine"},
                     {"TORCHELASTIC_RUN_ID", "r"},
                     {"PMIX_NAMESPACE", "n"},
                     {"OMPI_MCA_ess_base_jobid", "1"},
                     {"SLURM_JOB_ID", "2"},
                     {"SLURM_STEP_ID", "3"}});
  BOOST_TEST(t.value == "mine");
  BOOST_TEST(t.source == "GCL_TOKEN");
}

BOOST_AUTO_TEST_CASE(the_innermost_launcher_names_the_job) {
  // torchrun or mpirun inside a Slurm allocation: two of them in one allocation share its job
  // id, so the inner launcher's identity is the job's.
  auto in_slurm = [](std::map<std::string, std::string> m) {
    m["SLURM_JOB_ID"] = "900";
    m["SLURM_STEP_ID"] = "0";
    return token_of(m);
  };
  BOOST_TEST(in_slurm({{"TORCHELASTIC_RUN_ID", "x"}}).source == "TORCHELASTIC_RUN_ID");
  BOOST_TEST(in_slurm({{"PMIX_NAMESPACE", "x"}}).source == "PMIX_NAMESPACE");
  BOOST_TEST(in_slurm({{"OMPI_MCA_orte_ess_jobid", "x"}}).source == "OMPI_MCA_orte_ess_jobid");
  BOOST_TEST(in_slurm({{"TORCHELASTIC_RUN_ID", "x"}}).value !=
             in_slurm({{"TORCHELASTIC_RUN_ID", "y"}}).value);
}

BOOST_AUTO_TEST_CASE(no_job_identity_leaves_the_token_empty) {
  auto none = token_of({});
  BOOST_TEST(none.value.empty());
  BOOST_TEST(none.source == "none");
  // torchrun's default --rdzv-id is "none", shared by every such job: not an identity.
  auto torch_default = token_of({{"TORCHELASTIC_RUN_ID", "none"}});
  BOOST_TEST(torch_default.value.empty());
  BOOST_TEST(torch_default.source == "none");
  BOOST_TEST(token_of({{"TORCHELASTIC_RUN_ID", "none"}, {"SLURM_JOB_ID", "4"}}).source ==
             "SLURM_JOB_ID");
  // MPICH's Hydra exports only these: no job identity.
  BOOST_TEST(token_of({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}, {"PMI_FD", "5"}}).source == "none");
}

BOOST_AUTO_TEST_CASE(the_origin_of_a_token_the_program_set) {
  gcl::tcp_options o;
  BOOST_TEST(o.token_origin() == "none");
  o.token = "abc";
  BOOST_TEST(o.token_origin() == "tcp_options::token");
}

BOOST_AUTO_TEST_CASE(each_group_draws_its_own_random_token) {
  gcl::tcp_options o;
  o.timeout = std::chrono::seconds{5};
  gcl::tcp_transport::group g1(2, o), g2(2, o);
  BOOST_TEST(!g1.options().token.empty());
  BOOST_TEST(g1.options().token_origin() == "random");
  BOOST_TEST(g1.options().token != g2.options().token);
  // A token the program chose is kept.
  o.token = "chosen";
  gcl::tcp_transport::group g3(2, o);
  BOOST_TEST(g3.options().token == "chosen");
  BOOST_TEST(g3.options().token_origin() == "tcp_options::token");
}

BOOST_AUTO_TEST_CASE(a_rank_of_another_group_is_refused_naming_the_token_source) {
  // Rank 1 of group g2 tries to join g1's rank 0: the random tokens differ.
  gcl::tcp_options o;
  o.timeout = std::chrono::seconds{5};
  gcl::tcp_transport::group g1(2, o), g2(2, o);
  auto stranger = g2.options();
  stranger.rank = 1;
  stranger.master_port = g1.options().master_port;
  stranger.master_addr = g1.options().master_addr;
  std::string error;
  std::jthread r0([&] {
    try {
      g1.connect(0);  // times out: its rank 1 never comes
    } catch (gcl::transport_error const&) {
    }
  });
  try {
    gcl::tcp_transport t(stranger);
  } catch (gcl::transport_error const& e) {
    error = e.what();
  }
  BOOST_TEST(error.find("wrong job token") != std::string::npos, error);
  BOOST_TEST(error.find("comes from random") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(the_default_timeout_is_thirty_minutes_and_gcl_timeout_overrides_it) {
  // Long enough for a rank to evaluate or checkpoint while the others wait (torch's default);
  // a dead peer is noticed at once regardless.
  BOOST_TEST(gcl::tcp_options{}.timeout.count() == 30 * 60 * 1000);
  {
    job_env env(std::map<std::string, std::string>{});
    BOOST_TEST(gcl::tcp_options::from_env().timeout.count() == 30 * 60 * 1000);
  }
  {
    job_env env(std::map<std::string, std::string>{{"GCL_TIMEOUT", "45.5"}});
    BOOST_TEST(gcl::tcp_options::from_env().timeout.count() == 45500);
  }
}

// The local rank and the number of ranks on this host, from each launcher's own variables,
// read through from_env's getenv hook (the process's environment is left alone).
namespace {
gcl::tcp_options from(std::map<std::string, std::string> vars) {
  vars.emplace("RANK", "1");
  vars.emplace("WORLD_SIZE", "8");
  vars.emplace("MASTER_ADDR", "127.0.0.1");
  vars.emplace("MASTER_PORT", "29500");
  return gcl::tcp_options::from_env([&](char const* n) -> char const* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

BOOST_AUTO_TEST_CASE(each_launcher_gives_the_local_rank_and_size) {
  auto none = from({});
  BOOST_TEST(none.local_rank == -1);
  BOOST_TEST(none.local_size == 0);
  struct launcher {
    char const* rank_var;
    char const* size_var;
  };
  for (auto [rv, sv] :
       {launcher{"LOCAL_RANK", "LOCAL_WORLD_SIZE"},                            // torchrun
        launcher{"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},  // Open MPI
        launcher{"PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"},                        // PMIx
        launcher{"SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},                    // Slurm
        launcher{"MPI_LOCALRANKID", "MPI_LOCALNRANKS"}}) {                     // MPICH
    BOOST_TEST_CONTEXT(rv << ", " << sv) {
      auto o = from({{rv, "2"}, {sv, "4"}});
      BOOST_TEST(o.local_rank == 2);
      BOOST_TEST(o.local_size == 4);
      BOOST_TEST(o.rank == 1);
      BOOST_TEST(o.size == 8);
    }
  }
}

BOOST_AUTO_TEST_CASE(slurm_tasks_per_node_is_read_at_this_node) {
  // Nodes 0..2 run 2 tasks each, node 3 runs 1.
  auto at = [](char const* node) {
    return from({{"WORLD_SIZE", "7"}, {"SLURM_TASKS_PER_NODE", "2(x3),1"}, {"SLURM_NODEID", node}})
        .local_size;
  };
  BOOST_TEST(at("0") == 2);
  BOOST_TEST(at("2") == 2);
  BOOST_TEST(at("3") == 1);
  BOOST_TEST(at("4") == 0);  // not in the list: unknown
  BOOST_TEST(from({{"SLURM_TASKS_PER_NODE", "4(x2)"}}).local_size ==
             4);  // one count: no node id needed
  BOOST_TEST(from({{"SLURM_TASKS_PER_NODE", "4,2"}}).local_size == 0);  // several, no node id
  // The step's own list wins over the job's.
  BOOST_TEST(from({{"SLURM_STEP_TASKS_PER_NODE", "3"}, {"SLURM_TASKS_PER_NODE", "4"}}).local_size ==
             3);
  BOOST_CHECK_THROW(from({{"SLURM_TASKS_PER_NODE", "2(y3)"}}), gcl::usage_error);
  BOOST_CHECK_THROW(from({{"SLURM_TASKS_PER_NODE", "0"}}), gcl::usage_error);
}

BOOST_AUTO_TEST_CASE(a_bad_local_rank_is_refused_naming_the_variable) {
  try {
    from({{"LOCAL_RANK", "4"}, {"LOCAL_WORLD_SIZE", "4"}});
    BOOST_FAIL("no error");
  } catch (gcl::usage_error const& e) {
    BOOST_TEST(std::string(e.what()).find("LOCAL_RANK='4'") != std::string::npos);
  }
  BOOST_CHECK_THROW(from({{"PMIX_LOCAL_SIZE", "x"}}), gcl::usage_error);
}

BOOST_AUTO_TEST_CASE(a_rank_of_its_own_core_spins) {
  // One rank on this host always fits the CPUs this process may use; more than 2^20 never does.
  BOOST_TEST(from({{"LOCAL_WORLD_SIZE", "1"}}).spin == gcl::tcp_options::default_spin);
  BOOST_TEST(from({{"SLURM_TASKS_PER_NODE", "1"}}).spin == gcl::tcp_options::default_spin);
  BOOST_TEST(from({}).spin.count() == 0);
}

BOOST_AUTO_TEST_CASE(ranks_outnumbering_the_cpus_share_cores_and_poll_longer) {
  auto const many = std::to_string(1 << 20);  // more ranks than any machine's CPUs
  auto o = from({{"LOCAL_WORLD_SIZE", many}});
  BOOST_TEST(o.shares_cores);
  BOOST_TEST(o.spin == gcl::tcp_options::over_two_per_cpu_spin);  // and more than two to a CPU
  // GCL_SPIN_US sets the polling, not what the rank shares.
  o = from({{"LOCAL_WORLD_SIZE", many}, {"GCL_SPIN_US", "7"}});
  BOOST_TEST(o.shares_cores);
  BOOST_TEST(o.spin.count() == 7);
  // Bound to a core of its own by gcl-launch; one rank per host; nothing said: not shared.
  BOOST_TEST(!from({{"LOCAL_WORLD_SIZE", many}, {"GCL_BOUND_CPU", "0"}}).shares_cores);
  BOOST_TEST(!from({{"LOCAL_WORLD_SIZE", "1"}}).shares_cores);
  BOOST_TEST(!from({}).shares_cores);
}

BOOST_AUTO_TEST_CASE(more_than_two_ranks_to_a_cpu_poll_longer_still) {
  auto const cpus = gcl::tcp_options::usable_cpus();
  auto ranks = [](unsigned n) {
    return std::map<std::string, std::string>{{"LOCAL_WORLD_SIZE", std::to_string(n)}};
  };
  BOOST_TEST(gcl::tcp_options::over_two_per_cpu_spin > gcl::tcp_options::shared_core_spin);
  // Two ranks to a CPU share cores; one more than that polls longer.
  BOOST_TEST(from(ranks(cpus + 1)).spin == gcl::tcp_options::shared_core_spin);
  BOOST_TEST(from(ranks(2 * cpus)).spin == gcl::tcp_options::shared_core_spin);
  BOOST_TEST(!from(ranks(2 * cpus)).over_two_per_cpu);
  // Two to a CPU crowd the cores (every core runs two); one fewer does not, where that is more
  // than the CPUs.
  BOOST_TEST(from(ranks(2 * cpus)).crowds_cores);
  if (2 * cpus - 1 > cpus) BOOST_TEST(!from(ranks(2 * cpus - 1)).crowds_cores);
  BOOST_TEST(!from(ranks(cpus)).crowds_cores);
  auto many = from(ranks(2 * cpus + 1));
  BOOST_TEST(many.shares_cores);
  BOOST_TEST(many.over_two_per_cpu);
  BOOST_TEST(many.crowds_cores);
  BOOST_TEST(many.spin == gcl::tcp_options::over_two_per_cpu_spin);
  // GCL_SPIN_US still decides; a rank bound to a core of its own polls briefly.
  auto told = ranks(2 * cpus + 1);
  told["GCL_SPIN_US"] = "7";
  BOOST_TEST(from(told).spin.count() == 7);
  told.erase("GCL_SPIN_US");
  told["GCL_BOUND_CPU"] = "0";
  BOOST_TEST(from(told).spin == gcl::tcp_options::default_spin);
  BOOST_TEST(!from(told).over_two_per_cpu);
  BOOST_TEST(!from(told).crowds_cores);
}

// The CPUs a rank sends at the rendezvous are those it may run on; its polling follows rank
// 0's judgement of them unless GCL_SPIN_US says how long to poll.
BOOST_AUTO_TEST_CASE(from_env_gives_the_cpus_this_process_may_use) {
  cpu_set_t set;
  CPU_ZERO(&set);
  BOOST_TEST_REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  std::vector<int> want;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) want.push_back(c);
  auto const o = from({});
  BOOST_TEST(o.cpus == want, boost::test_tools::per_element());
  BOOST_TEST(o.spin_follows_cores);
  BOOST_TEST(!from({{"GCL_SPIN_US", "7"}}).spin_follows_cores);
  BOOST_TEST(gcl::tcp_options{}.cpus.empty());  // not known unless said
}

BOOST_AUTO_TEST_CASE(same_host_connections_use_reno_unless_told_otherwise) {
  BOOST_TEST(from({}).same_host_congestion_control == "reno");
  BOOST_TEST(from({{"GCL_SAME_HOST_CONGESTION", "cubic"}}).same_host_congestion_control == "cubic");
  // "system": the system's choice, which the transport leaves alone.
  BOOST_TEST(from({{"GCL_SAME_HOST_CONGESTION", "system"}}).same_host_congestion_control.empty());
}
