#define BOOST_TEST_MODULE communicator
#include <boost/test/unit_test.hpp>

#include "support/archetype_transport.hpp"
#include "support/rank_checks.hpp"
#include "support/sendrecv_reduce_checks.hpp"

#include <gcl/communicator.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using gcl::inproc_transport;

static_assert(gcl::combining_transport<inproc_transport>);
static_assert(gcl::combining_transport<gcl::counting<inproc_transport>>);
static_assert(!gcl::combining_transport<gcl_test::archetype_transport>);

BOOST_AUTO_TEST_CASE(rank_and_size) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    auto ranks = gcl::spawn<inproc_transport>(n, [n](auto& comm) {
      RANK_TEST(comm.size() == n);
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
      RANK_TEST(v == (std::vector<int>{1, 2, 3}), boost::test_tools::per_element());
      {
        auto const got = comm.template recv<double>(0);
        RANK_TEST(got == 42.5);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(ring_pass_with_sendrecv_and_irecv) {
  for (int n : {1, 2, 3, 5, 8}) {
    gcl::spawn<inproc_transport>(n, [n](auto& comm) {
      int right = (comm.rank() + 1) % n, left = (comm.rank() + n - 1) % n;
      std::array<int, 2> got{};
      comm.sendrecv(right, std::array<int, 2>{comm.rank(), 7}, left, got);
      RANK_TEST(got[0] == left);
      int x = -1;
      auto r = comm.irecv(left, x, gcl::tag{3});
      comm.isend(right, comm.rank() * 10, gcl::tag{3}).wait();
      r.wait();
      RANK_TEST(x == left * 10);
    });
  }
}

BOOST_AUTO_TEST_CASE(fifo_per_tag) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      for (int i = 0; i < 100; ++i) comm.send(1, i, gcl::tag{static_cast<std::uint32_t>(i % 2)});
    } else {
      for (int i = 1; i < 100; i += 2) {
        auto const got = comm.template recv<int>(0, gcl::tag{1});
        RANK_TEST(got == i);
      }
      for (int i = 0; i < 100; i += 2) {
        auto const got = comm.template recv<int>(0, gcl::tag{0});
        RANK_TEST(got == i);
      }
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
  // Ranks 0, 1 and 3 wait in recv (1 for the thrower, 0 and 3 for ranks that wait too) with a
  // 60 s timeout: each must be released by the abort, naming rank 2's error, not by a timeout.
  std::array<std::string, 4> seen;  // each rank writes only its own slot
  BOOST_CHECK_EXCEPTION(
      gcl::spawn<inproc_transport>(
          4,
          [&](auto& comm) {
            if (comm.rank() == 2) throw std::runtime_error("boom");
            try {
              comm.template recv<int>((comm.rank() + 1) % 4);
            } catch (gcl::transport_error const& e) {
              seen[comm.rank()] = (e.code() == gcl::errc::aborted ? "aborted: " : "other: ") +
                                  std::string(e.what());
              throw;
            }
          },
          {.timeout = std::chrono::seconds(60)}),
      std::runtime_error, [](auto const& e) { return std::string(e.what()) == "boom"; });
  for (int r : {0, 1, 3}) {
    BOOST_TEST(seen[r].starts_with("aborted: "), "rank " << r << ": " << seen[r]);
    BOOST_TEST(seen[r].find("rank 2 failed: boom") != std::string::npos,
               "rank " << r << ": " << seen[r]);
  }
}

BOOST_AUTO_TEST_CASE(payload_kinds_arrays_spans_and_structs) {
  struct point {
    int x;
    double y;
  };
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      std::array<short, 3> a{1, -2, 3};
      comm.send(1, a);
      std::vector<float> v{0.5f, 1.5f, 2.5f, 3.5f};
      comm.send(1, std::span<float const>(v).subspan(1, 2));
      comm.send(1, point{7, 0.25});
    } else {
      std::array<short, 3> a{};
      comm.recv(0, a);
      RANK_TEST((a == std::array<short, 3>{1, -2, 3}));
      std::vector<float> v(4, 0.0f);
      comm.recv(0, std::span<float>(v).first(2));  // a temporary span is a valid destination
      RANK_TEST((v == std::vector<float>{1.5f, 2.5f, 0.0f, 0.0f}));
      auto p = comm.template recv<point>(0);
      RANK_TEST(p.x == 7);
      RANK_TEST(p.y == 0.25);
    }
  });
}

BOOST_AUTO_TEST_CASE(isend_is_complete_and_irecv_test_polls) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      auto s = comm.isend(1, 5);
      RANK_TEST(s.test());  // eager: complete at once
      s.wait();
      comm.template recv<int>(1);  // rank 1 has posted; now send the payload
      comm.send(1, std::vector<int>{4, 5, 6}, gcl::tag{2});
    } else {
      {
        auto const got = comm.template recv<int>(0);
        RANK_TEST(got == 5);
      }
      std::vector<int> v(3);
      auto r = comm.irecv(0, v, gcl::tag{2});
      RANK_TEST(!r.test());
      comm.send(0, 1);
      // A hang guard, not a speed bound: rank 0 sends at once, so only a request that never
      // completes can reach it, however loaded the machine.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
      while (!r.test()) {
        RANK_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "irecv never completed");
        std::this_thread::yield();
      }
      RANK_TEST((v == std::vector<int>{4, 5, 6}));
    }
  });
}

BOOST_AUTO_TEST_CASE(usage_errors_name_the_rank_and_send_nothing) {
  gcl::spawn<inproc_transport>(3, [&](auto& comm) {
    int x = 0;
    RANK_CHECK_EXCEPTION(comm.recv(-1, x), gcl::usage_error, [&](auto const& e) {
      std::string w = e.what();
      return w.find("rank " + std::to_string(comm.rank())) != std::string::npos &&
             w.find("rank -1") != std::string::npos &&
             w.find("world size is 3") != std::string::npos;
    });
    RANK_CHECK_THROW(comm.sendrecv(3, 1, 0, x), gcl::usage_error);
    RANK_CHECK_THROW(comm.sendrecv(0, 1, 3, x), gcl::usage_error);
    RANK_CHECK_THROW(comm.irecv(3, x), gcl::usage_error);
    RANK_CHECK_THROW(comm.send(0, 1, gcl::tag{gcl::tag_user_limit + 5}), gcl::usage_error);
    // Nothing was sent: a message to self with tag 0 is the first one to arrive.
    comm.send(comm.rank(), 99);
    RANK_TEST(comm.template recv<int>(comm.rank()) == 99);
  });
}

// Counts live instances, to see that cached state dies with its communicator.
struct tracked_state {
  static inline std::atomic<int> alive{0};
  int value = 0;
  tracked_state() { ++alive; }
  ~tracked_state() { --alive; }
};
struct other_state {
  int value = 7;
};

BOOST_AUTO_TEST_CASE(cached_state_is_one_per_type_and_dies_with_the_communicator) {
  auto out = gcl::spawn<inproc_transport>(2, [](auto& comm) {
    auto& a = comm.template cached<tracked_state>();
    a.value = comm.rank() + 10;
    auto& b = comm.template cached<other_state>();
    bool const same = &comm.template cached<tracked_state>() == &a;
    return std::array<int, 3>{same ? 1 : 0, comm.template cached<tracked_state>().value, b.value};
  });
  for (int r = 0; r < 2; ++r) {
    BOOST_TEST(out[r][0] == 1);       // the same instance on every use
    BOOST_TEST(out[r][1] == r + 10);  // each rank's communicator has its own
    BOOST_TEST(out[r][2] == 7);       // another type: another, default-constructed instance
  }
  BOOST_TEST(tracked_state::alive == 0);  // destroyed with the communicators
}

// sendrecv_reduce combines with the operand order asked for, whether the transport combines as
// the message arrives (inproc told to combine every message: from the cell, or from the
// sender's memory for a large one; counting<inproc> forwards it), declines (inproc's default
// below 4 MiB) or has no sendrecv_reduce (the archetype, which has no sendrecv either): then
// the communicator receives into scratch and reduces. P = 1 sends to itself.
BOOST_AUTO_TEST_CASE(sendrecv_reduce_combines_in_operand_order_on_every_path) {
  std::vector<std::size_t> const counts{0, 1, 3, 17, 5000, 70000};
  auto check = [&](auto& comm) { return gcl_test::check_sendrecv_reduce(comm, counts); };
  gcl::inproc_options every;
  every.combine_bytes = 1;
  for (int p : {1, 2, 3}) {
    auto inproc = gcl::spawn<inproc_transport>(p, check, every);
    auto declined = gcl::spawn<inproc_transport>(p, check);
    auto counted = gcl::spawn<gcl::counting<inproc_transport>>(p, check, every);
    auto archetype = gcl_test::spawn_archetype(p, check);
    for (int r = 0; r < p; ++r) {
      auto const i = static_cast<std::size_t>(r);
      BOOST_TEST(inproc[i].empty(), "inproc P=" << p << " rank " << r << ": " << inproc[i]);
      BOOST_TEST(declined[i].empty(), "declined P=" << p << " rank " << r << ": " << declined[i]);
      BOOST_TEST(counted[i].empty(), "counting P=" << p << " rank " << r << ": " << counted[i]);
      BOOST_TEST(archetype[i].empty(),
                 "archetype P=" << p << " rank " << r << ": " << archetype[i]);
    }
  }
}

// Counted as the sendrecv it is, combined or declined: one message each way, its bytes, one
// round.
BOOST_AUTO_TEST_CASE(sendrecv_reduce_counts_one_message_each_way) {
  for (std::size_t combine_bytes : {std::size_t{1}, std::size_t{0}}) {
    gcl::inproc_options o;
    o.combine_bytes = combine_bytes;
    auto stats = gcl::spawn<gcl::counting<inproc_transport>>(
        2,
        [](auto& comm) {
          std::vector<float> out(1000, 1.0f), acc(1000, 2.0f);
          comm.sendrecv_reduce(1 - comm.rank(), std::span<float const>(out), 1 - comm.rank(),
                               std::span<float>(acc), [](float a, float b) { return a + b; });
          RANK_TEST(acc[999] == 3.0f);
          return comm.transport().stats();
        },
        o);
    for (auto const& s : stats) {
      BOOST_TEST(s.messages_sent == 1u);
      BOOST_TEST(s.messages_received == 1u);
      BOOST_TEST(s.bytes_sent == 4000u);
      BOOST_TEST(s.rounds == 1);
    }
  }
}

// Below combine_bytes the transport declines and sends nothing: the exchange that follows
// meets no stray message.
BOOST_AUTO_TEST_CASE(a_declined_sendrecv_reduce_sends_nothing) {
  gcl::inproc_options o;
  o.combine_bytes = 4096;
  auto declined = gcl::spawn<inproc_transport>(
      2,
      [](auto& comm) {
        int const peer = 1 - comm.rank();
        std::vector<std::uint32_t> out(1023, 5), acc(1023, 1), got(1023, 0);
        auto const c =
            gcl::combiner::of<std::uint32_t>(gcl_test::affine_mix{}, gcl::received_operand::right);
        bool const combined = comm.transport().sendrecv_reduce(
            peer, gcl::tag{9}, std::as_bytes(std::span(out)), peer, gcl::tag{9},
            std::as_writable_bytes(std::span(acc)), c);
        comm.sendrecv(peer, std::vector<std::uint32_t>(1023, 7), peer, got, gcl::tag{9});
        return !combined && acc == std::vector<std::uint32_t>(1023, 1) &&
               got == std::vector<std::uint32_t>(1023, 7);
      },
      o);
  BOOST_TEST(declined[0]);
  BOOST_TEST(declined[1]);
}

// A transport may hand the combiner bytes at any address (a ring in shared memory, a socket
// buffer): misaligned ones are combined as aligned ones are, more than a block of them.
BOOST_AUTO_TEST_CASE(a_combiner_takes_misaligned_input) {
  std::size_t const n = 3000;
  std::vector<std::uint32_t> acc(n), want(n);
  std::vector<std::byte> raw(n * sizeof(std::uint32_t) + 1);
  for (std::size_t i = 0; i < n; ++i) {
    acc[i] = static_cast<std::uint32_t>(i);
    auto const got = static_cast<std::uint32_t>(i * 7 + 1);
    std::memcpy(raw.data() + 1 + i * sizeof got, &got, sizeof got);
    want[i] = got * 3u + acc[i];  // received on the left
  }
  gcl_test::affine_mix const op;  // outlives the combiner, as combiner::of requires
  auto const c = gcl::combiner::of<std::uint32_t>(op, gcl::received_operand::left);
  c(reinterpret_cast<std::byte*>(acc.data()), raw.data() + 1, n * sizeof(std::uint32_t));
  BOOST_TEST(acc == want, boost::test_tools::per_element());
}
