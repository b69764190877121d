// gcl::all_reduce sweep: `all_reduce --world-size 4 --algorithm ring --min-bytes 8 --max-bytes
// 64M`.
#include "harness.hpp"

struct all_reduce_call {
  static constexpr bench::collective kind = bench::collective::all_reduce;
  static constexpr std::string_view default_algorithm = "by_size";  // gcl::all_reduce's default
  template <class Alg, class Comm, class T, class Op>
  static constexpr bool supports = gcl::all_reduce_algorithm<Alg, Comm, T, Op>;
  template <class Comm, class Buffers, class Op, class Alg>
  static void run(Comm& comm, Buffers& b, Op const& op, int, Alg const& alg) {
    gcl::all_reduce(comm, b.in, op, alg);
  }
};

int main(int argc, char** argv) {
  return bench::run<all_reduce_call>(argc, argv);
}
