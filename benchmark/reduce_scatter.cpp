// gcl::reduce_scatter sweep: the size column is the whole input (P blocks), as in nccl-tests.
#include "harness.hpp"

struct reduce_scatter_call {
  static constexpr bench::collective kind = bench::collective::reduce_scatter;
  static constexpr std::string_view default_algorithm = "ring";
  template <class Alg, class Comm, class T, class Op>
  static constexpr bool supports = gcl::reduce_scatter_algorithm<Alg, Comm, T, Op>;
  template <class Comm, class Buffers, class Op, class Alg>
  static void run(Comm& comm, Buffers& b, Op const& op, int, Alg const& alg) {
    gcl::reduce_scatter(comm, b.in, b.out, op, alg);
  }
};

int main(int argc, char** argv) {
  return bench::run<reduce_scatter_call>(argc, argv);
}
