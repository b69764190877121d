// gcl::broadcast sweep: `broadcast --world-size 4 --root 0 --algorithm tree`.
#include "harness.hpp"

struct broadcast_call {
  static constexpr bench::collective kind = bench::collective::broadcast;
  static constexpr std::string_view default_algorithm = "tree";
  template <class Alg, class Comm, class T, class Op>
  static constexpr bool supports = gcl::broadcast_algorithm<Alg, Comm, T>;
  template <class Comm, class Buffers, class Op, class Alg>
  static void run(Comm& comm, Buffers& b, Op const&, int root, Alg const& alg) {
    gcl::broadcast(comm, b.in, root, alg);
  }
};

int main(int argc, char** argv) {
  return bench::run<broadcast_call>(argc, argv);
}
