// Every rank greets, in rank order: one line per rank.
//
//     $ hello --world-size 4 --name Alice
//     Rank 0: Hello, Alice!
//     ...
//     Rank 3: Hello, Alice!
//
// The ranks run concurrently, so to print in order each rank waits for a token from the rank
// before it, prints, and passes the token on.
#include <gcl/communicator.hpp>

#include <cstdio>
#include <string>

#include "common/launch.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Each rank prints a greeting, in rank order"};
  gcl_cli::setup(app, "hello");
  gcl_example::launch_options opts;
  gcl_example::add_launch_options(app, opts);
  std::string name = "World";
  app.add_option("--name", name, "who to greet")->capture_default_str();
  GCL_CLI_PARSE(app, argc, argv);

  return gcl_example::launch(app, opts, [&](auto& comm) {
    int token = 0;
    if (comm.rank() > 0) comm.recv(comm.rank() - 1, token);
    std::printf("Rank %d: Hello, %s!\n", comm.rank(), name.c_str());
    std::fflush(stdout);
    if (comm.rank() + 1 < comm.size()) comm.send(comm.rank() + 1, token + 1);
  });
}
