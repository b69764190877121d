#pragma once
// Runs a shm job as processes forked from the test: rank r's process builds its shm_transport
// from the options given (rank r, a token of the job's own), runs `f(comm)`, which returns the
// bytes it wants the test to see, and exits; what it returned, or its error, is in a file the
// test reads after the process ended. Nothing here waits for a time: a process that hangs is
// the ctest timeout's.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gcl/communicator.hpp>
#include <gcl/transport/shm.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gcl_test {

inline std::string random_token(char const* what) {
  std::random_device rd;
  return std::string("gcl-test-") + what + "-" + std::to_string(rd()) + "-" + std::to_string(rd());
}

// A temporary directory that removes itself.
struct temp_dir {
  std::filesystem::path path;
  temp_dir() {
    std::string t = (std::filesystem::temp_directory_path() / "gcl-shm-test-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path = t;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(int rank, char const* ext) const {
    return (path / (std::to_string(rank) + ext)).string();
  }
};

inline std::string read_file(std::string const& name) {
  std::ifstream f(name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct rank_outcome {
  int status = 0;      // waitpid's
  std::string output;  // what f returned
  std::string error;   // what() of what it threw
  bool exited_with(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
};

// Forks a child process that runs `body` as rank `rank` and _exits: 0, or 1 after writing what
// it threw to <rank>.err (2 for what is not a std::exception). Returns its pid.
inline pid_t fork_rank(temp_dir const& dir, int rank, std::function<void()> const& body) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 0;
  try {
    body();
  } catch (std::exception const& e) {
    std::ofstream(dir.file(rank, ".err")) << e.what();
    code = 1;
  } catch (...) {
    code = 2;
  }
  ::_exit(code);
}

// Starts rank `rank` of a job (fork_rank): a child process that runs f on an shm communicator,
// writes what f returns to <rank>.out and _exits. Returns its pid.
inline pid_t start_rank(
    temp_dir const& dir, gcl::shm_options o, int rank,
    std::function<std::string(gcl::communicator<gcl::shm_transport>&)> const& f) {
  return fork_rank(dir, rank, [&] {
    o.rank = rank;
    std::string out;
    {
      gcl::communicator<gcl::shm_transport> comm(gcl::shm_transport{o});
      out = f(comm);
    }
    std::ofstream(dir.file(rank, ".out"), std::ios::binary) << out;
  });
}

// Waits until every rank of `pids` has written <rank>.started; "" then, else what the first
// rank that ended before it did said ("rank 2 ended before it started: ..."). A rank that
// neither starts nor ends is the ctest timeout's.
inline std::string wait_until_started(temp_dir const& dir, std::vector<pid_t> const& pids) {
  for (std::size_t r = 0; r < pids.size(); ++r)
    while (!std::filesystem::exists(dir.file(static_cast<int>(r), ".started"))) {
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r])
        return "rank " + std::to_string(r) +
               " ended before it started: " + read_file(dir.file(static_cast<int>(r), ".err"));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  return {};
}

inline rank_outcome finish_rank(temp_dir const& dir, pid_t pid, int rank) {
  rank_outcome r;
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  r.output = read_file(dir.file(rank, ".out"));
  r.error = read_file(dir.file(rank, ".err"));
  return r;
}

// Runs a whole job of `size` processes and returns each rank's outcome.
inline std::vector<rank_outcome> run_job(
    int size, gcl::shm_options o,
    std::function<std::string(gcl::communicator<gcl::shm_transport>&)> const& f) {
  temp_dir dir;
  o.size = size;
  if (o.token.empty()) o.token = random_token("job");
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) pids.push_back(start_rank(dir, o, r, f));
  std::vector<rank_outcome> out;
  for (int r = 0; r < size; ++r) out.push_back(finish_rank(dir, pids[r], r));
  return out;
}

// The names in /dev/shm (empty if there is none): a job must leave it as it found it.
inline std::vector<std::string> dev_shm_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto const& e : std::filesystem::directory_iterator("/dev/shm", ec))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace gcl_test
