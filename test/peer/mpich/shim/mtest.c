/* A minimal stand-in for MPICH's test harness (test/mpi/util/mtest.c), written for gcl's peer
 * tests over the MPI adapter: what the programs in ../coll/ call, with MPICH's output (" No
 * Errors" from rank 0 when no rank counted an error). Not MPICH's code. */
#include <stdarg.h>

#include "mpitest.h"

static int verbose = 0;

void MTest_Init(int* argc, char*** argv) {
  const char* v = getenv("MPITEST_VERBOSE");
  MPI_Init(argc, argv);
  if (v) verbose = atoi(v);
}

void MTest_Finalize(int errs) {
  int rank, total = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    if (total)
      printf(" Found %d errors\n", total);
    else
      printf(" No Errors\n");
    fflush(stdout);
  }
  MPI_Finalize();
}

int MTestReturnValue(int errors) {
  return errors ? 1 : 0;
}

void MTestPrintfMsg(int level, const char fmt[], ...) {
  va_list list;
  if (verbose < level) return;
  va_start(list, fmt);
  vprintf(fmt, list);
  va_end(list);
  fflush(stdout);
}

/* The communicators MTestGetIntracommGeneral hands out, in order: a subset of MPICH's (no
 * intercommunicator merges, no MPI_COMM_SELF: the programs here ask for at least 2 ranks). */
enum {
  COMM_WORLD,
  COMM_DUP,         /* a dup of the world */
  COMM_REVERSED,    /* the world's ranks in reverse order */
  COMM_HALF,        /* the first half of the world, reversed; MPI_COMM_NULL on the others */
  COMM_ALL_BUT_ONE, /* the world without its last rank (allow_smaller only) */
  COMM_END
};
static int comm_index = 0;
static const char* comm_name = "";

int MTestGetIntracommGeneral(MPI_Comm* comm, int min_size, int allow_smaller) {
  int done = 0;
  while (!done) {
    int size, rank, basic = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    *comm = MPI_COMM_NULL;
    switch (comm_index) {
      case COMM_WORLD:
        *comm = MPI_COMM_WORLD;
        basic = 1;
        comm_name = "MPI_COMM_WORLD";
        break;
      case COMM_DUP:
        MPI_Comm_dup(MPI_COMM_WORLD, comm);
        comm_name = "Dup of MPI_COMM_WORLD";
        break;
      case COMM_REVERSED:
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, comm);
        comm_name = "Rank reverse of MPI_COMM_WORLD";
        break;
      case COMM_HALF:
        MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2 ? 1 : MPI_UNDEFINED, size - rank, comm);
        comm_name = "Rank reverse of half of MPI_COMM_WORLD";
        break;
      case COMM_ALL_BUT_ONE:
        if (allow_smaller && size - 1 >= min_size) {
          MPI_Comm_split(MPI_COMM_WORLD, rank < size - 1 ? 0 : MPI_UNDEFINED, rank, comm);
          comm_name = "Split of MPI_COMM_WORLD";
        }
        break;
      default: /* no more */
        comm_index = 0;
        comm_name = "MPI_COMM_NULL";
        return 0;
    }
    if (*comm != MPI_COMM_NULL) {
      int csize;
      MPI_Comm_size(*comm, &csize);
      done = csize >= min_size;
    } else {
      comm_name = "MPI_COMM_NULL";
      basic = 1;
      done = 1;
    }
    /* Done only when every rank is: all take the same communicators. */
    MPI_Allreduce(MPI_IN_PLACE, &done, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    ++comm_index;
    if (!done && !basic && *comm != MPI_COMM_NULL) MPI_Comm_free(comm);
  }
  return comm_index;
}

int MTestGetIntracomm(MPI_Comm* comm, int min_size) {
  return MTestGetIntracommGeneral(comm, min_size, 0);
}

const char* MTestGetIntracommName(void) {
  return comm_name;
}

void MTestFreeComm(MPI_Comm* comm) {
  if (*comm != MPI_COMM_WORLD && *comm != MPI_COMM_SELF && *comm != MPI_COMM_NULL)
    MPI_Comm_free(comm);
}

/* "-name=value" words, kept as the string itself. */
MTestArgList* MTestArgListCreate_arg(const char* arg) {
  char* copy = malloc(strlen(arg ? arg : "") + 1);
  strcpy(copy, arg ? arg : "");
  return copy;
}

int MTestArgListGetInt_with_default(MTestArgList* head, const char* name, int default_val) {
  const char* s = head;
  size_t const n = strlen(name);
  while (s && *s) {
    while (*s == ' ') ++s;
    if (*s == '-' && strncmp(s + 1, name, n) == 0) {
      const char* rest = s + 1 + n;
      if (*rest == '=') return atoi(rest + 1);
      if (*rest == ' ' || *rest == '\0') return 1; /* a bare "-name" */
    }
    s = strchr(s, ' ');
  }
  return default_val;
}

void MTestArgListDestroy(MTestArgList* head) {
  free(head);
}

const char* MTest_memtype_name(mtest_mem_type_e memtype) {
  return memtype == MTEST_MEM_TYPE__UNREGISTERED_HOST ? "host" : "unset";
}

void MTestMalloc(size_t size, mtest_mem_type_e type, void** hostbuf, void** devicebuf, int device) {
  (void)type;
  (void)device;
  *hostbuf = malloc(size);
  *devicebuf = *hostbuf;
  if (!*hostbuf && size) {
    fprintf(stderr, "MTestMalloc: out of memory (%zu bytes)\n", size);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void MTestFree(mtest_mem_type_e type, void* hostbuf, void* devicebuf) {
  (void)type;
  (void)devicebuf;
  free(hostbuf);
}

void MTestCopyContent(const void* sbuf, void* dbuf, size_t size, mtest_mem_type_e type) {
  (void)type;
  if (sbuf != dbuf) memcpy(dbuf, sbuf, size);
}
