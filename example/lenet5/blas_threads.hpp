#pragma once
/// \file
/// OpenBLAS's thread count, without its cblas.h (whose declarations clash with the ones
/// xtensor-blas brings). Ranks are threads sharing few cores: each GEMM should run on the
/// calling thread, so the trainer and the tests set 1.
///
///     lenet5::set_blas_threads(1);

extern "C" void openblas_set_num_threads(int num_threads);

namespace lenet5 {

/// Sets the number of threads every OpenBLAS call of this process may use.
inline void set_blas_threads(int n) {
  openblas_set_num_threads(n);
}

}  // namespace lenet5
