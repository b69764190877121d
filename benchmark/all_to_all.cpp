// gcl::all_to_all sweep: the size column is one rank's whole send buffer (P blocks).
#include "harness.hpp"

struct all_to_all_call {
  static constexpr bench::collective kind = bench::collective::all_to_all;
  static constexpr std::string_view default_algorithm = "direct";
  template <class Alg, class Comm, class T, class Op>
  static constexpr bool supports = gcl::all_to_all_algorithm<Alg, Comm, T>;
  template <class Comm, class Buffers, class Op, class Alg>
  static void run(Comm& comm, Buffers& b, Op const&, int, Alg const& alg) {
    gcl::all_to_all(comm, b.in, b.out, alg);
  }
};

int main(int argc, char** argv) {
  return bench::run<all_to_all_call>(argc, argv);
}
