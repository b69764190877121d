// Linked into every test program split into PARTS (test/CMakeLists.txt): with
// GCL_TEST_LIST_SELECTED set, the program prints the test cases its --run_test filter selects,
// one "gcl-selected-case: suite/case" line each, and exits before running any. Which cases a
// filter selects is then Boost.Test's own answer, the one the parts' runs get; Boost 1.74's
// --list_content ignores --run_test, and a matcher of ours could drift from Boost's. Read by
// test/support/parts_cover_all.cmake.
// A source of its own, not a header: the programs' own file defines BOOST_TEST_MODULE, which
// here would define the master suite a second time.
#include <boost/test/framework.hpp>
#include <boost/test/tree/test_unit.hpp>
#include <boost/test/tree/traverse.hpp>
#include <boost/test/tree/visitor.hpp>
#include <boost/test/unit_test_suite.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

struct print_selected : boost::unit_test::test_tree_visitor {
  void visit(boost::unit_test::test_case const& tc) override {
    std::printf("gcl-selected-case: %s\n", tc.full_name().c_str());
  }
};

// A global fixture is set up once the filters have enabled or disabled each test unit, and
// before the first case runs.
struct list_selected_cases {
  list_selected_cases() {
    if (std::getenv("GCL_TEST_LIST_SELECTED") == nullptr) return;
    print_selected visitor;
    // ignore_status = false: only the enabled units, those the filter selected.
    boost::unit_test::traverse_test_tree(boost::unit_test::framework::master_test_suite(), visitor,
                                         false);
    std::fflush(stdout);
    std::_Exit(0);  // no case runs, no report follows
  }
};

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(list_selected_cases);
