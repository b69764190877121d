#pragma once
// Runs a rank function on p ranks over every transport a test of the communicator layer covers:
// inproc, counting<inproc>, shm (threads) and, built with GCL_TEST_TCP, TCP and hybrid (two
// pretend hosts, even and odd ranks: shared memory within each, TCP between).

#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>
#if defined(GCL_TEST_TCP)
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/tcp.hpp>
#endif

#include <chrono>
#include <string>
#include <vector>

namespace gcl_test {

// f(comm) -> std::string, a complaint or "": returns the first complaint, naming the transport,
// P and the rank. `timeout` bounds every call over TCP and hybrid (a hang guard only).
template <class F>
std::string on_every_transport(int p, F f, std::chrono::seconds timeout) {
  auto first = [&](std::vector<std::string> const& errors, char const* over) -> std::string {
    for (int r = 0; r < p; ++r)
      if (!errors[static_cast<std::size_t>(r)].empty())
        return std::string(over) + " P=" + std::to_string(p) + " rank " + std::to_string(r) + ": " +
               errors[static_cast<std::size_t>(r)];
    return "";
  };
  std::string e = first(gcl::spawn<gcl::inproc_transport>(p, f), "inproc");
  if (e.empty()) e = first(gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, f), "counting");
  if (e.empty()) e = first(gcl::spawn<gcl::shm_transport>(p, f), "shm");
#if defined(GCL_TEST_TCP)
  gcl::tcp_options o;
  o.timeout = timeout;
  if (e.empty()) e = first(gcl::spawn<gcl::tcp_transport>(p, f, o), "tcp");
  gcl::hybrid_options h;
  h.tcp.timeout = timeout;
  for (int r = 0; r < p; ++r) h.test_hosts.push_back(r % 2);
  if (e.empty()) e = first(gcl::spawn<gcl::hybrid_transport>(p, f, h), "hybrid");
#else
  (void)timeout;
#endif
  return e;
}

}  // namespace gcl_test
