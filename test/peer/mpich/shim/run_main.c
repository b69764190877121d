/* main() of the programs that define run() instead (MPICH builds them with its
 * util/run_mpitests.c): initialize, run the test with the arguments joined by spaces, sum the
 * errors on rank 0, which prints "No Errors" or "Found N errors", finalize. */
#include "mpitest.h"

int main(int argc, char** argv) {
  char args[1024] = "";
  size_t used = 0;
  int rank, errs, total = 0;
  for (int i = 1; i < argc; ++i) {
    size_t const n = strlen(argv[i]);
    if (used + n + 2 > sizeof args) break;
    if (used) args[used++] = ' ';
    memcpy(args + used, argv[i], n + 1);
    used += n;
  }
  MTest_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  errs = run(args);
  MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total == 0)
      printf("No Errors\n");
    else
      printf("Found %d errors\n", total);
    fflush(stdout);
  }
  MPI_Finalize();
  return errs;
}
