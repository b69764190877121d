// gcl::all_gather sweep: the size column is the whole output (P blocks), as in nccl-tests.
#include "harness.hpp"

struct all_gather_call {
  static constexpr bench::collective kind = bench::collective::all_gather;
  static constexpr std::string_view default_algorithm = "ring";
  template <class Alg, class Comm, class T, class Op>
  static constexpr bool supports = gcl::all_gather_algorithm<Alg, Comm, T>;
  template <class Comm, class Buffers, class Op, class Alg>
  static void run(Comm& comm, Buffers& b, Op const&, int, Alg const& alg) {
    gcl::all_gather(comm, b.in, b.out, alg);
  }
};

int main(int argc, char** argv) {
  return bench::run<all_gather_call>(argc, argv);
}
