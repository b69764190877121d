#define BOOST_TEST_MODULE transport_shm_collectives
#include <boost/test/unit_test.hpp>

// Every collective with every algorithm that implements it, over shm and over inproc, on the
// same inputs: the results must be bit-identical. Over ranks that are threads of this process
// (one segment, the same rings a job of processes has) with each way a large message can take
// (copied once, or streamed through a ring smaller than it), and over ranks that are processes
// forked from this test (copied with process_vm_readv where the kernel allows it), one of them
// with a /dev/shm far too small for the segment, as Docker's is for large jobs.

#include <sched.h>
#include <sys/mount.h>

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "../support/every_collective.hpp"
#include "shm_fork.hpp"

namespace {

using gcl_test::record;
using gcl_test::run_all;

// More floats than a 256 KiB ring holds, more bytes than offer_bytes: the large paths.
constexpr std::size_t large = 70000;

std::string serialize(std::vector<record> const& rs) {
  std::string s;
  for (auto const& [name, v] : rs) {
    std::uint64_t n = name.size(), c = v.size();
    s.append(reinterpret_cast<char const*>(&n), sizeof n).append(name);
    s.append(reinterpret_cast<char const*>(&c), sizeof c);
    s.append(reinterpret_cast<char const*>(v.data()), v.size() * sizeof(float));
  }
  return s;
}

std::vector<record> deserialize(std::string const& s) {
  std::vector<record> rs;
  std::size_t at = 0;
  auto get = [&](void* to, std::size_t n) {
    if (at + n > s.size()) throw std::runtime_error("truncated results");
    if (n > 0) std::memcpy(to, s.data() + at, n);
    at += n;
  };
  while (at < s.size()) {
    std::uint64_t n = 0, c = 0;
    get(&n, sizeof n);
    std::string name(n, '\0');
    get(name.data(), n);
    get(&c, sizeof c);
    std::vector<float> v(c);
    get(v.data(), c * sizeof(float));
    rs.emplace_back(std::move(name), std::move(v));
  }
  return rs;
}

void compare(int p, char const* how, std::vector<std::vector<record>> const& got,
             std::vector<std::vector<record>> const& want) {
  BOOST_TEST_REQUIRE(got.size() == want.size());
  for (int r = 0; r < p; ++r) {
    BOOST_TEST_REQUIRE(got[r].size() == want[r].size(), how << " P=" << p << " rank " << r);
    for (std::size_t k = 0; k < got[r].size(); ++k) {
      auto const& [name, g] = got[r][k];
      auto const& w = want[r][k].second;
      BOOST_TEST_INFO(how << " P=" << p << " rank " << r << ": " << name);
      BOOST_TEST_REQUIRE(name == want[r][k].first);
      BOOST_TEST_REQUIRE(g.size() == w.size());
      BOOST_TEST((g.empty() || std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0));
    }
  }
}

std::vector<std::vector<record>> reference(int p) {
  return gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) { return run_all(comm, large); });
}

}  // namespace

BOOST_AUTO_TEST_CASE(threads_are_bit_identical_to_inproc) {
  for (int p : {1, 2, 3, 4, 5, 8}) {
    auto want = reference(p);
    gcl::shm_options o;
    o.timeout = std::chrono::seconds{60};
    auto got = gcl::spawn<gcl::shm_transport>(p, [](auto& comm) { return run_all(comm, large); }, o);
    BOOST_TEST_MESSAGE("P=" << p << ": " << got[0].size() << " results per rank compared");
    BOOST_TEST(got[0].size() > 100u);
    compare(p, "copied once", got, want);
    // No cross-memory attach and a small ring: every large message streams through it.
    o.cross_memory_attach = false;
    o.ring_bytes = 16 * 1024;
    got = gcl::spawn<gcl::shm_transport>(p, [](auto& comm) { return run_all(comm, large); }, o);
    compare(p, "streamed", got, want);
  }
}

BOOST_AUTO_TEST_CASE(processes_are_bit_identical_to_inproc_and_leave_dev_shm_alone) {
  auto const before = gcl_test::dev_shm_names();
  for (int p : {1, 2, 3, 4, 5, 8}) {
    auto want = reference(p);
    gcl::shm_options o;
    o.timeout = std::chrono::seconds{60};
    bool once = true;
    auto outcomes = gcl_test::run_job(p, o, [&](auto& comm) {
      if (comm.size() > 1) once = comm.transport().copies_once_from((comm.rank() + 1) % comm.size());
      auto out = serialize(run_all(comm, large));
      return std::string(once ? "1" : "0") + out;
    });
    std::vector<std::vector<record>> got;
    for (int r = 0; r < p; ++r) {
      BOOST_TEST_REQUIRE(outcomes[r].exited_with(0), "P=" << p << " rank " << r << ": "
                                                           << outcomes[r].error);
      auto const& out = outcomes[r].output;
      BOOST_TEST_REQUIRE(!out.empty());
      if (r == 0)
        BOOST_TEST_MESSAGE("P=" << p << ": large messages "
                                << (out[0] == '1' ? "copied once (process_vm_readv)"
                                                  : "streamed through the rings"));
      got.push_back(deserialize(out.substr(1)));
    }
    compare(p, "processes", got, want);
  }
  BOOST_TEST(gcl_test::dev_shm_names() == before, "the jobs left something in /dev/shm");
}

// Docker's /dev/shm is 64 MiB; a segment of 8 ranks is larger than what this one allows (64
// KiB). The segment is not there, so the job runs. Needs a mount namespace (root, or a user
// namespace): skipped without one.
BOOST_AUTO_TEST_CASE(a_tiny_dev_shm_does_not_matter) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64k") != 0)
      ::_exit(77);
    gcl::shm_options o;
    o.timeout = std::chrono::seconds{60};
    auto outcomes = gcl_test::run_job(8, o, [](auto& comm) {
      std::vector<float> v(large, 1.0f);
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
      return std::string(v[0] == 8.0f && v[large - 1] == 8.0f ? "ok" : "wrong");
    });
    for (auto const& o2 : outcomes)
      if (!o2.exited_with(0) || o2.output != "ok") {
        std::fprintf(stderr, "rank failed: %s\n", o2.error.c_str());
        ::_exit(1);
      }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BOOST_TEST_REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    BOOST_TEST_MESSAGE("no mount namespace here: skipped");
    return;
  }
  BOOST_TEST(WEXITSTATUS(status) == 0);
}
