// A message travels around a ring of ranks twice: once with blocking send/recv, once with
// non-blocking irecv/isend. Each rank adds its rank to the message, so when it comes back to
// rank 0 it holds 0 + 1 + ... + (P-1), and the list of ranks it passed through.
//
//     $ send_recv --world-size 4
#include <gcl/communicator.hpp>

#include <array>
#include <cstdio>
#include <string>

#include "common/launch.hpp"

namespace {

// Trivially copyable, so it can be sent as it is.
struct message {
  long sum = 0;
  int hops = 0;
  std::array<int, 64> path{};  // the first 64 ranks visited
};

void visit(message& m, int rank) {
  m.sum += rank;
  if (m.hops < static_cast<int>(m.path.size())) m.path[static_cast<std::size_t>(m.hops)] = rank;
  ++m.hops;
}

void report(char const* how, message const& m, int p) {
  std::string path;
  for (int i = 0; i < m.hops && i < static_cast<int>(m.path.size()); ++i)
    path += (i ? " -> " : "") + std::to_string(m.path[static_cast<std::size_t>(i)]);
  long expected = static_cast<long>(p) * (p - 1) / 2;
  std::printf("%s: %s -> 0, sum %ld, expected %ld: %s\n", how, path.c_str(), m.sum, expected,
              m.sum == expected && m.hops == p ? "OK" : "WRONG");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Pass a message around a ring of ranks, blocking and non-blocking"};
  gcl_cli::setup(app, "send_recv");
  gcl_example::launch_options opts;
  gcl_example::add_launch_options(app, opts);
  GCL_CLI_PARSE(app, argc, argv);

  return gcl_example::launch(app, opts, [](auto& comm) {
    int const p = comm.size(), right = (comm.rank() + 1) % p, left = (comm.rank() + p - 1) % p;

    // Blocking: rank 0 starts the message, everyone else waits for it, adds itself, passes it on.
    message m;
    if (comm.rank() == 0) {
      visit(m, 0);
      comm.send(right, m);  // eager: returns at once, even when right == 0 (P = 1)
      comm.recv(left, m);
      report("blocking", m, p);
    } else {
      comm.recv(left, m);
      visit(m, comm.rank());
      comm.send(right, m);
    }

    // Non-blocking: every rank posts its receive first, then rank 0 sends; the others forward
    // as soon as `wait()` returns. Posting early lets the message land straight in `in`.
    message in;
    auto request = comm.irecv(left, in, gcl::tag{1});
    if (comm.rank() == 0) {
      message start;
      visit(start, 0);
      comm.isend(right, start, gcl::tag{1}).wait();
      request.wait();
      report("non-blocking", in, p);
    } else {
      request.wait();
      visit(in, comm.rank());
      comm.isend(right, in, gcl::tag{1}).wait();
    }
  });
}
