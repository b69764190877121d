// One rank of a job under tools/gcl-launch, for test/transport/launch_first_failure.sh. All
// ranks form a TCP job (configured from the environment) and pass a barrier; then rank V dies
// while every other rank is blocked receiving from it, so the others fail moments after V,
// each naming it: the launcher must still blame V, the first to exit.
//
//   launch_victim V kill      rank V sends itself SIGKILL
//   launch_victim V exit N    rank V exits with code N at once (no clean close of its links)
//
// The others print "rank R: <error>" on stderr and exit with code 1.

#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/transport/tcp.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  std::string const how = argc > 2 ? argv[2] : "";
  if (argc < 3 || (how != "kill" && !(how == "exit" && argc > 3))) {
    std::fprintf(stderr, "usage: %s V kill | V exit N\n", argv[0]);
    return 2;
  }
  int const victim = std::atoi(argv[1]);
  int rank = -1;
  try {
    gcl::communicator comm{gcl::tcp_transport(gcl::tcp_options::from_env())};
    rank = comm.rank();
    gcl::barrier(comm, gcl::tree{});  // every rank is connected before the victim dies
    if (rank == victim) {
      std::fflush(nullptr);
      if (how == "kill") std::raise(SIGKILL);
      // _Exit skips the transport's destructor: the peers see the links drop, as with a crash,
      // and not a goodbye after which this process could still be exiting.
      std::_Exit(std::atoi(argv[3]));
    }
    int x = 0;
    comm.recv(victim, x);  // never sent: blocks until the victim is gone
    std::fprintf(stderr, "rank %d: received from rank %d, which should have died\n", rank, victim);
    return 4;
  } catch (std::exception const& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
}
