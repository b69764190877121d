/* A minimal stand-in for MPICH's mtest_dtp.h: one test instance, host memory on every rank
 * (MPICH's version iterates over memory kinds: host, registered host, device). */
#ifndef GCL_PEER_MTEST_DTP_H
#define GCL_PEER_MTEST_DTP_H

#include "mpitest.h"

typedef enum { MTEST_COLL_NOCOUNT } mtest_dtp_arg_type_e;

struct dtp_args {
  int done;
  union {
    struct {
      mtest_mem_type_e oddmem;
      mtest_mem_type_e evenmem;
    } coll;
  } u;
};

static void dtp_args_init_arg(struct dtp_args* a, mtest_dtp_arg_type_e type, const char* arg) {
  (void)type;
  (void)arg;
  a->done = 0;
  a->u.coll.oddmem = MTEST_MEM_TYPE__UNREGISTERED_HOST;
  a->u.coll.evenmem = MTEST_MEM_TYPE__UNREGISTERED_HOST;
}

static int dtp_args_get_next(struct dtp_args* a) {
  return a->done++ == 0;
}

static void dtp_args_finalize(struct dtp_args* a) {
  (void)a;
}

#endif /* GCL_PEER_MTEST_DTP_H */
