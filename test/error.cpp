#define BOOST_TEST_MODULE error
#include <boost/test/unit_test.hpp>

#include <gcl/error.hpp>

#include <string>
#include <system_error>
#include <type_traits>

static_assert(std::is_base_of_v<std::system_error, gcl::transport_error>);
static_assert(std::is_base_of_v<std::logic_error, gcl::usage_error>);
static_assert(std::is_error_code_enum_v<gcl::errc>);

BOOST_AUTO_TEST_CASE(category_and_messages) {
  BOOST_TEST(std::string(gcl::error_category().name()) == "gcl");
  BOOST_TEST(gcl::make_error_code(gcl::errc::timeout).message() == "timed out");
  BOOST_TEST(gcl::make_error_code(gcl::errc::aborted).message() ==
             "aborted because another rank failed");
  BOOST_TEST(gcl::make_error_code(gcl::errc::mismatch).message() ==
             "ranks disagree about the call");
  BOOST_TEST(gcl::make_error_code(gcl::errc::connection_refused).message() == "connection refused");
  BOOST_TEST(gcl::make_error_code(gcl::errc::peer_closed).message() ==
             "peer closed the connection");
  BOOST_TEST(gcl::make_error_code(gcl::errc::protocol).message() == "protocol violation");
  BOOST_TEST(gcl::error_category().message(999) == "unknown gcl error");
  BOOST_TEST(&gcl::make_error_code(gcl::errc::timeout).category() == &gcl::error_category());
}

BOOST_AUTO_TEST_CASE(codes_compare_with_errc) {
  std::error_code ec = gcl::errc::timeout;  // implicit, through is_error_code_enum
  BOOST_TEST((ec == gcl::errc::timeout));
  BOOST_TEST((ec != gcl::errc::aborted));
  BOOST_TEST((ec != std::make_error_code(std::errc::timed_out)));  // a different category
}

BOOST_AUTO_TEST_CASE(transport_error_keeps_code_and_what) {
  try {
    throw gcl::transport_error(gcl::errc::peer_closed, "gcl: rank 1: recv from rank 0 failed");
  } catch (std::system_error const& e) {
    BOOST_TEST((e.code() == gcl::errc::peer_closed));
    std::string w = e.what();
    BOOST_TEST(w.find("gcl: rank 1: recv from rank 0 failed") == 0u);
  }
}

BOOST_AUTO_TEST_CASE(usage_error_is_a_logic_error) {
  BOOST_CHECK_EXCEPTION(throw gcl::usage_error("root 4 >= size 4"), std::logic_error,
                        [](auto const& e) { return std::string(e.what()) == "root 4 >= size 4"; });
}
