// implicit_bias: which solution of [1, 0.1, 0.01] . theta = 1 each optimizer converges to from
// theta = 0 (squared loss). See implicit_bias.hpp for the derivations.
//
//   $ implicit_bias
//   SGD                            [0.990000990, 0.099000099, 0.009900010]  expected a/|a|^2 = ...

#include <gcl/version.hpp>

#include <cstdio>
#include <cstring>

#include "implicit_bias.hpp"

int main(int argc, char** argv) {
  // No options: --help and --version, anything else is refused (doc/cli.md). Standard C++ only,
  // so no CLI11 here.
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-h") || !std::strcmp(argv[i], "--help")) {
      std::printf(
          "Which solution of [1, 0.1, 0.01] . theta = 1 each optimizer converges to from "
          "theta = 0\nUsage: implicit_bias [OPTIONS]\n\nOptions:\n"
          "  -h,--help    Print this help message and exit\n"
          "  --version    print the version and exit\n");
      return 0;
    }
    if (!std::strcmp(argv[i], "--version")) {
      std::printf("implicit_bias (gcl %d.%d.%d)\n", GCL_VERSION_MAJOR, GCL_VERSION_MINOR,
                  GCL_VERSION_PATCH);
      return 0;
    }
  }
  if (argc > 1) {
    std::fprintf(stderr,
                 "implicit_bias: The following argument was not expected: %s (see --help)\n",
                 argv[1]);
    return 2;
  }
  namespace ib = implicit_bias;
  auto show = [](char const* name, ib::vec const& t, ib::vec const& expected, char const* what) {
    std::printf("%-30s [%.9f, %.9f, %.9f]  expected %s = [%.9f, %.9f, %.9f]\n", name, t[0], t[1],
                t[2], what, expected[0], expected[1], expected[2]);
  };
  double const n2 = 1.0101, l1 = 1.11;
  show("SGD", ib::sgd_limit(), {1 / n2, 0.1 / n2, 0.01 / n2}, "a/|a|^2");
  show("simplified Adam", ib::adam_simplified_limit(), {1 / l1, 1 / l1, 1 / l1}, "[1,1,1]/1.11");
  show("sign descent, step lr*|g|_1", ib::sign_l1_limit(), {1 / l1, 1 / l1, 1 / l1},
       "[1,1,1]/1.11");
  show("rescaled features + SGD", ib::rescaled_sgd_limit(), {1.0 / 3, 10.0 / 3, 100.0 / 3},
       "[1/3,10/3,100/3]");
}
