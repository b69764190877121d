#define BOOST_TEST_MODULE communicator
#include <boost/test/unit_test.hpp>

#include <gcl/communicator.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <array>
#include <numeric>
#include <vector>

using gcl::inproc_transport;

BOOST_AUTO_TEST_CASE(rank_and_size) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    auto ranks = gcl::spawn<inproc_transport>(n, [n](auto& comm) {
      BOOST_TEST(comm.size() == n);
      return comm.rank();
    });
    std::vector<int> expected(n);
    std::iota(expected.begin(), expected.end(), 0);
    BOOST_TEST(ranks == expected, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(send_recv_vector_and_scalar) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      comm.send(1, std::vector<int>{1, 2, 3});
      comm.send(1, 42.5);
    } else {
      std::vector<int> v(3);
      comm.recv(0, v);
      BOOST_TEST(v == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
      BOOST_TEST(comm.template recv<double>(0) == 42.5);
    }
  });
}

BOOST_AUTO_TEST_CASE(ring_pass_with_sendrecv_and_irecv) {
  for (int n : {1, 2, 3, 5, 8}) {
    gcl::spawn<inproc_transport>(n, [n](auto& comm) {
      int right = (comm.rank() + 1) % n, left = (comm.rank() + n - 1) % n;
      std::array<int, 2> got{};
      comm.sendrecv(right, std::array<int, 2>{comm.rank(), 7}, left, got);
      BOOST_TEST(got[0] == left);
      int x = -1;
      auto r = comm.irecv(left, x, gcl::tag{3});
      comm.isend(right, comm.rank() * 10, gcl::tag{3}).wait();
      r.wait();
      BOOST_TEST(x == left * 10);
    });
  }
}

BOOST_AUTO_TEST_CASE(fifo_per_tag) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      for (int i = 0; i < 100; ++i) comm.send(1, i, gcl::tag{static_cast<std::uint32_t>(i % 2)});
    } else {
      for (int i = 1; i < 100; i += 2) BOOST_TEST(comm.template recv<int>(0, gcl::tag{1}) == i);
      for (int i = 0; i < 100; i += 2) BOOST_TEST(comm.template recv<int>(0, gcl::tag{0}) == i);
    }
  });
}

BOOST_AUTO_TEST_CASE(peer_out_of_range_is_usage_error) {
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<inproc_transport>(2, [](auto& comm) { comm.send(5, 1); }), gcl::usage_error,
      [](auto const& e) { return std::string(e.what()).find("rank 5") != std::string::npos; });
}

BOOST_AUTO_TEST_CASE(size_mismatch_names_both_sizes) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(2,
                                                     [](auto& comm) {
                                                       if (comm.rank() == 0)
                                                         comm.send(1, std::vector<int>(3));
                                                       else {
                                                         std::vector<int> v(4);
                                                         comm.recv(0, v);
                                                       }
                                                     }),
                        gcl::transport_error, [](auto const& e) {
                          std::string w = e.what();
                          return e.code() == gcl::errc::mismatch &&
                                 w.find("16 bytes") != std::string::npos &&
                                 w.find("12 bytes") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(a_throwing_rank_releases_the_others) {
  auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<inproc_transport>(4,
                                   [](auto& comm) {
                                     if (comm.rank() == 2) throw std::runtime_error("boom");
                                     comm.template recv<int>((comm.rank() + 1) % 4);
                                   }),
      std::runtime_error, [](auto const& e) { return std::string(e.what()) == "boom"; });
  BOOST_TEST((std::chrono::steady_clock::now() - start < std::chrono::seconds(5)));
}
