/* A minimal stand-in for MPICH's test harness header (test/mpi/include/mpitest.h), written for
 * gcl's peer tests: it declares what the programs in ../coll/ use, implemented by mtest.c over
 * the MPI adapter (test/peer/mpi_adapter/). Not MPICH's code. */
#ifndef GCL_PEER_MPITEST_H
#define GCL_PEER_MPITEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpitestconf.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifndef MULTI_TESTS
/* The test of a program without a main(): run_main.c calls it between MTest_Init and
 * MTest_Finalize, with the program's arguments joined by spaces. */
int run(const char* arg);
#endif

void MTest_Init(int* argc, char*** argv);
/* Sums errs over MPI_COMM_WORLD; rank 0 prints " No Errors" or " Found N errors". Then
 * MPI_Finalize. */
void MTest_Finalize(int errs);
int MTestReturnValue(int errors);
void MTestPrintfMsg(int level, const char fmt[], ...);

/* The communicators of MPI_COMM_WORLD's ranks to test with, one per call (MPI_COMM_NULL on
 * the ranks outside one); 0 when there are no more. */
int MTestGetIntracommGeneral(MPI_Comm* comm, int min_size, int allow_smaller);
int MTestGetIntracomm(MPI_Comm* comm, int min_size);
const char* MTestGetIntracommName(void);
void MTestFreeComm(MPI_Comm* comm);

/* Arguments "-name=value" of run()'s string. */
typedef void MTestArgList;
MTestArgList* MTestArgListCreate_arg(const char* arg);
int MTestArgListGetInt_with_default(MTestArgList* head, const char* name, int default_val);
void MTestArgListDestroy(MTestArgList* head);

/* Memory: host memory only. */
typedef enum {
  MTEST_MEM_TYPE__UNSET,
  MTEST_MEM_TYPE__UNREGISTERED_HOST,
} mtest_mem_type_e;
const char* MTest_memtype_name(mtest_mem_type_e memtype);
void MTestMalloc(size_t size, mtest_mem_type_e type, void** hostbuf, void** devicebuf, int device);
void MTestFree(mtest_mem_type_e type, void* hostbuf, void* devicebuf);
void MTestCopyContent(const void* sbuf, void* dbuf, size_t size, mtest_mem_type_e type);

#ifndef MTEST_MPI_VERSION
#define MTEST_MPI_VERSION MPI_VERSION
#endif
#ifndef MTEST_MPI_SUBVERSION
#define MTEST_MPI_SUBVERSION MPI_SUBVERSION
#endif
#define MTEST_HAVE_MIN_MPI_VERSION(major_, minor_)                        \
  ((MTEST_MPI_VERSION == (major_) && MTEST_MPI_SUBVERSION >= (minor_)) || \
   (MTEST_MPI_VERSION > (major_)))
#define MTEST_VG_MEM_INIT(addr_, size_) memset(addr_, 0, size_)

#ifdef __cplusplus
}
#endif

#endif /* GCL_PEER_MPITEST_H */
