/* What MPICH's configure would find on this platform, for the programs in ../coll/. */
#ifndef GCL_PEER_MPITESTCONF_H
#define GCL_PEER_MPITESTCONF_H
#define HAVE_LONG_DOUBLE 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#endif
