/* A minimal stand-in for MPICH's mpicolltest.h: the MTest_<collective> wrappers the programs
 * in ../coll/ call, blocking only (MPICH's can also start the non-blocking form and wait). */
#ifndef GCL_PEER_MPICOLLTEST_H
#define GCL_PEER_MPICOLLTEST_H

#include "mpitest.h"

static inline int MTest_Alltoall(int is_blocking, const void* sendbuf, int sendcount,
                                 MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                 MPI_Datatype recvtype, MPI_Comm comm) {
  if (!is_blocking) {
    fprintf(stderr, "MTest_Alltoall: the non-blocking form (MPI_Ialltoall) is not supported\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return MPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

#endif /* GCL_PEER_MPICOLLTEST_H */
