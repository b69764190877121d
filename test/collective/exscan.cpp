// exscan: the tests of scan (scan.cpp), for the exclusive scan.
#define GCL_TEST_EXCLUSIVE_SCAN
#include "scan.cpp"
