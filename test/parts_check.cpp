// A program for the check that a program split into PARTS runs every case in some part
// (support/parts_cover_all.cmake): test/CMakeLists.txt gives it parts that leave a case out, and
// parts of which one selects nothing, and the check must fail naming what is wrong. Its cases
// pass; only their names matter.
#define BOOST_TEST_MODULE parts_check
#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_CASE(alpha) {
  BOOST_TEST(true);
}
BOOST_AUTO_TEST_CASE(beta_one) {
  BOOST_TEST(true);
}

BOOST_AUTO_TEST_SUITE(inner)
BOOST_AUTO_TEST_CASE(gamma) {
  BOOST_TEST(true);
}
BOOST_AUTO_TEST_SUITE_END()
