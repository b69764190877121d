/* The adapter refuses what it does not support, loudly: each argument is one misuse, which
 * must stop the program with a message naming the call (test/peer/CMakeLists.txt checks the
 * message), never return as if it had worked. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  int in[2] = {1, 2}, out[2] = {0, 0};
  MPI_Init(&argc, &argv);
  if (argc > 1 && strcmp(argv[1], "minloc-on-int") == 0)
    MPI_Allreduce(in, out, 2, MPI_INT, MPI_MINLOC, MPI_COMM_WORLD);
  else if (argc > 1 && strcmp(argv[1], "sum-on-char") == 0)
    MPI_Reduce(in, out, 2, MPI_CHAR, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (argc > 1 && strcmp(argv[1], "null-datatype") == 0)
    MPI_Bcast(in, 2, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
  else if (argc > 1 && strcmp(argv[1], "null-comm") == 0)
    MPI_Barrier(MPI_COMM_NULL);
  else if (argc > 1 && strcmp(argv[1], "count-mismatch") == 0) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(in, out, rank == 0 ? 1 : 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  }
  printf("returned: %s\n", argc > 1 ? argv[1] : "(nothing asked)");
  MPI_Finalize();
  return 0;
}
