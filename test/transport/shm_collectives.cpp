#define BOOST_TEST_MODULE transport_shm_collectives
#include <boost/test/unit_test.hpp>

// Every collective with every algorithm that implements it, over shm and over inproc, on the
// same inputs: the results must be bit-identical. Over ranks that are threads of this process
// (one segment, the same rings a job of processes has) with each way a large message can take
// (copied once, or streamed through a ring smaller than it), and over ranks that are processes
// forked from this test (copied with process_vm_readv where the kernel allows it, else streamed
// through a ring smaller than it), one of them with a /dev/shm far too small for the segment,
// as Docker's is for large jobs.
//
// One test case per pass and world size, and CMake runs groups of them as tests of their own,
// so that each takes a few seconds under ThreadSanitizer or on a loaded machine (and they run
// in parallel). The thresholds are scaled down rather than the messages up: offers from 16 KiB,
// rings of 16 KiB, and a "large" size of 24000 bytes that crosses both. The paths are those the
// defaults (64 KiB, up to 256 KiB) select for larger messages, at a twelfth of the bytes to
// generate, reduce and compare (which is what made this test slow under TSan). Messages past
// the default thresholds are tested in shm.cpp (fifo_per_tag_messages_to_oneself_and_eager_sends).

#include <sched.h>
#include <sys/mount.h>

#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "../support/every_collective.hpp"
#include "shm_fork.hpp"

namespace {

using gcl_test::record;
using gcl_test::run_all;

constexpr std::size_t offer_bytes = 16 * 1024;
constexpr std::size_t ring_bytes = 16 * 1024;
// More bytes than offer_bytes and than a ring holds: the large paths. (The algorithms also send
// pieces of it, and the smaller sizes, which take the ring.)
constexpr std::size_t large = 6000;
static_assert(large * sizeof(float) > offer_bytes && large * sizeof(float) > ring_bytes);

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

// inproc's results at P, computed once per process and shared by the passes that compare to it.
std::vector<std::vector<record>> const& reference(int p) {
  static std::map<int, std::vector<std::vector<record>>> done;
  auto it = done.find(p);
  if (it == done.end())
    it = done.emplace(p, gcl::spawn<gcl::inproc_transport>(
                             p, [](auto& comm) { return run_all(comm, large); }))
             .first;
  return it->second;
}

gcl::shm_options scaled() {
  gcl::shm_options o;
  o.timeout = std::chrono::seconds{60};  // a hang guard only: nothing here waits for a time
  o.offer_bytes = offer_bytes;
  o.cross_memory_attach = true;  // the copied-once path (never by default)
  return o;
}

// Ranks are threads; large messages are offered and copied once (memcpy from the sender's
// buffer, where processes use process_vm_readv).
void threads_copied_once(int p) {
  auto const& want = reference(p);
  auto got = gcl::spawn<gcl::shm_transport>(
      p, [](auto& comm) { return run_all(comm, large); }, scaled());
  BOOST_TEST_MESSAGE("P=" << p << ": " << got[0].size() << " results per rank compared");
  BOOST_TEST(got[0].size() > 100u);
  compare(p, "copied once", got, want);
}

// No cross-memory attach and a ring smaller than the large messages: every message streams
// through the rings, a large one a ring's worth at a time as its receiver drains it, and small
// ones go round the first KiB of each lap (shm_options::rewind_bytes) between them. Over the
// algorithms whose traffic differs most: a whole buffer to one peer (tree), pieces around a
// ring with sendrecv (ring), every rank to every rank at once (direct), and both sides of a
// pair sending a whole buffer to each other (recursive_doubling).
void threads_streamed(int p) {
  std::vector<std::string> const some{"tree", "ring", "direct", "recursive_doubling"};
  auto want =
      gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) { return run_all(comm, large, some); });
  auto o = scaled();
  o.cross_memory_attach = false;
  o.ring_bytes = ring_bytes;
  o.rewind_bytes = 1024;
  auto got = gcl::spawn<gcl::shm_transport>(
      p, [&](auto& comm) { return run_all(comm, large, some); }, o);
  BOOST_TEST(got[0].size() > 50u);
  compare(p, "streamed", got, want);
}

// Ring's scatter-reduce combines each chunk it receives straight into the message that forwards
// it (shm_transport::reduce_and_forward), for chunks that are combined as they arrive
// (combine_bytes: here every size). With rings that take a chunk whole, and with rings smaller
// than one, where a forwarding rank runs out of room, lets the rest land in its buffer, and
// takes it up again. The same results as inproc, bit for bit, and the path taken.
void threads_forwarded(int p) {
  std::vector<std::string> const some{"ring"};
  // Chunks of 16 KiB and more (at P <= 8), which wait in their rings for their receives
  // (shm_impl::parks) rather than be queued where they arrive early.
  std::size_t const n = 40000;
  auto want =
      gcl::spawn<gcl::inproc_transport>(p, [&](auto& comm) { return run_all(comm, n, some); });
  for (std::size_t ring : {std::size_t{0}, ring_bytes}) {
    auto o = scaled();
    o.cross_memory_attach = false;
    o.ring_bytes = ring;
    o.combine_bytes = 1;
    auto out = gcl::spawn<gcl::shm_transport>(
        p,
        [&](auto& comm) {
          auto results = run_all(comm, n, some);
          return std::pair(results, comm.transport().bytes_forwarded());
        },
        o);
    std::vector<std::vector<record>> got;
    for (int r = 0; r < p; ++r) {
      got.push_back(out[r].first);
      // Where the rings take a chunk whole, at least the first piece of each (with small
      // rings, how much depends on how the ranks interleave).
      if (ring == 0)
        BOOST_TEST(out[r].second > 0u,
                   "P=" << p << ": rank " << r << " forwarded nothing from ring to ring");
    }
    BOOST_TEST(got[0].size() > 10u);
    compare(p, ring == 0 ? "forwarded" : "forwarded through small rings", got, want);
  }
}

// Ranks are processes forked from this test; large messages are copied with process_vm_readv
// where the kernel allows it (the log says which), else streamed through a ring smaller than
// them, and small ones go round the first 2 KiB of each lap. The job leaves /dev/shm as it was.
void processes(int p) {
  auto const before = gcl_test::dev_shm_names();
  auto const& want = reference(p);
  auto o = scaled();
  o.ring_bytes = ring_bytes;
  o.rewind_bytes = 2048;
  bool once = true;
  auto outcomes = gcl_test::run_job(p, o, [&](auto& comm) {
    if (comm.size() > 1) once = comm.transport().copies_once_from((comm.rank() + 1) % comm.size());
    auto out = serialize(run_all(comm, large));
    return std::string(once ? "1" : "0") + out;
  });
  std::vector<std::vector<record>> got;
  for (int r = 0; r < p; ++r) {
    BOOST_TEST_REQUIRE(outcomes[r].exited_with(0),
                       "P=" << p << " rank " << r << ": " << outcomes[r].error);
    auto const& out = outcomes[r].output;
    BOOST_TEST_REQUIRE(!out.empty());
    if (r == 0)
      BOOST_TEST_MESSAGE("P=" << p << ": large messages "
                              << (out[0] == '1' ? "copied once (process_vm_readv)"
                                                : "streamed through the rings"));
    got.push_back(deserialize(out.substr(1)));
  }
  compare(p, "processes", got, want);
  BOOST_TEST(gcl_test::dev_shm_names() == before, "the job left something in /dev/shm");
}

}  // namespace

BOOST_AUTO_TEST_CASE(threads_p1) {
  threads_copied_once(1);
}
BOOST_AUTO_TEST_CASE(threads_p2) {
  threads_copied_once(2);
}
BOOST_AUTO_TEST_CASE(threads_p3) {
  threads_copied_once(3);
}
BOOST_AUTO_TEST_CASE(threads_p4) {
  threads_copied_once(4);
}
BOOST_AUTO_TEST_CASE(threads_p5) {
  threads_copied_once(5);
}
BOOST_AUTO_TEST_CASE(threads_p8) {
  threads_copied_once(8);
}
BOOST_AUTO_TEST_CASE(streamed_p2) {
  threads_streamed(2);
}
BOOST_AUTO_TEST_CASE(streamed_p3) {
  threads_streamed(3);
}
BOOST_AUTO_TEST_CASE(streamed_p5) {
  threads_streamed(5);
}
BOOST_AUTO_TEST_CASE(forwarded_p3) {
  threads_forwarded(3);
}
BOOST_AUTO_TEST_CASE(forwarded_p4) {
  threads_forwarded(4);
}
BOOST_AUTO_TEST_CASE(forwarded_p8) {
  threads_forwarded(8);
}
BOOST_AUTO_TEST_CASE(processes_p1) {
  processes(1);
}
BOOST_AUTO_TEST_CASE(processes_p2) {
  processes(2);
}
BOOST_AUTO_TEST_CASE(processes_p3) {
  processes(3);
}
BOOST_AUTO_TEST_CASE(processes_p4) {
  processes(4);
}
BOOST_AUTO_TEST_CASE(processes_p5) {
  processes(5);
}
BOOST_AUTO_TEST_CASE(processes_p8) {
  processes(8);
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
      // The default thresholds (pieces of 35 KB: through the default rings).
      std::size_t const n = 70000;
      std::vector<float> v(n, 1.0f);
      gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
      return std::string(v[0] == 8.0f && v[n - 1] == 8.0f ? "ok" : "wrong");
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
