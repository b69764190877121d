#define BOOST_TEST_MODULE transport_shm_pool
#include <boost/test/unit_test.hpp>

// Buffers in the job's pool (shm_transport::allocate, doc/shm.md "Buffers in the pool"): every
// rank maps every pool, so a large message sent from one is read by its receiver where it lies.
// Results must be exact on that path for every way a message travels (send/recv, sendrecv,
// sendrecv_reduce's combine, a message that arrives before its receive), between processes
// and between threads; the path must actually be taken (sent_from_pool counts it); a message
// that only partly lies in the pool must not take it; the pool's bookkeeping must hand out and
// take back memory, and a job without room must say what to set.

#include <gcl/gcl.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/shm.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "shm_fork.hpp"

namespace {

// Offers from 16 KiB (as the other shm tests), so that these sizes take the large path.
constexpr std::size_t offer_bytes = 16 * 1024;

gcl::shm_options with_pool(std::size_t bytes) {
  gcl::shm_options o;
  o.pool_bytes = bytes;
  o.offer_bytes = offer_bytes;
  o.pool_offer_bytes = offer_bytes;  // else, where each rank has a core, from 256 KiB
  o.cross_memory_attach = false;     // else large messages from outside the pool are offered too
  o.timeout = std::chrono::seconds{60};
  return o;
}

// Values that sums of up to 8 ranks keep exact in float.
float value(int rank, std::size_t i) {
  return static_cast<float>((rank + 1) * 1000 + static_cast<int>(i % 977));
}

// What this rank's checks found wrong ("" if nothing), and how many messages it sent from its
// pool. Every rank runs the same calls.
template <class Comm>
std::string exercise(Comm& comm, std::uint64_t& from_pool) {
  int const p = comm.size(), me = comm.rank();
  std::string wrong;
  auto check = [&](bool ok, std::string const& what) {
    if (!ok && wrong.empty()) wrong = "rank " + std::to_string(me) + ": " + what;
  };
  auto sum_at = [&](std::size_t i) {
    float s = 0;
    for (int r = 0; r < p; ++r) s += value(r, i);
    return s;
  };
  for (std::size_t n : {std::size_t{5000}, std::size_t{65536}, std::size_t{300001}}) {
    auto buf = comm.transport().template allocate<float>(n);
    check(buf.in_pool() && buf.size() == n, "allocate gave no pool buffer");
    auto fill = [&] {
      for (std::size_t i = 0; i < n; ++i) buf[i] = value(me, i);
    };
    // all_reduce by every algorithm that reduces through sendrecv_reduce or sendrecv
    auto all_reduce_is_exact = [&](auto alg, char const* name) {
      fill();
      gcl::all_reduce(comm, buf, gcl::sum{}, alg);
      bool ok = true;
      for (std::size_t i = 0; i < n && ok; ++i) ok = buf[i] == sum_at(i);
      check(ok, std::string("all_reduce ") + name + " of " + std::to_string(n) + " floats");
    };
    all_reduce_is_exact(gcl::ring{}, "ring");
    all_reduce_is_exact(gcl::halving_doubling{}, "halving_doubling");
    all_reduce_is_exact(gcl::recursive_doubling{}, "recursive_doubling");
    all_reduce_is_exact(gcl::tree{}, "tree");
    all_reduce_is_exact(gcl::by_size{}, "by_size");
    // broadcast from the last rank
    fill();
    gcl::broadcast(comm, buf, p - 1);
    bool ok = true;
    for (std::size_t i = 0; i < n && ok; ++i) ok = buf[i] == value(p - 1, i);
    check(ok, "broadcast of " + std::to_string(n) + " floats");
    // a send that arrives before its receive is posted: each rank sends to the next, then
    // receives from the previous into ordinary memory
    if (p > 1) {
      fill();
      std::vector<float> got(n);
      int const next = (me + 1) % p, prev = (me + p - 1) % p;
      if (me % 2 == 0) {
        comm.send(next, std::span<float const>(buf));
        comm.recv(prev, got);
      } else {
        comm.recv(prev, got);
        comm.send(next, std::span<float const>(buf));
      }
      ok = true;
      for (std::size_t i = 0; i < n && ok; ++i) ok = got[i] == value(prev, i);
      check(ok, "send/recv of " + std::to_string(n) + " floats");
    }
  }
  from_pool = comm.transport().sent_from_pool();
  return wrong;
}

}  // namespace

BOOST_AUTO_TEST_CASE(processes_read_large_messages_from_the_pool_exactly) {
  for (int p : {2, 3, 4}) {
    auto outcomes = gcl_test::run_job(p, with_pool(4 << 20), [](auto& comm) {
      std::uint64_t from_pool = 0;
      auto wrong = exercise(comm, from_pool);
      return wrong.empty() ? std::to_string(from_pool) : "wrong: " + wrong;
    });
    for (int r = 0; r < p; ++r) {
      BOOST_TEST_REQUIRE(outcomes[r].exited_with(0),
                         "P=" << p << " rank " << r << ": " << outcomes[r].error);
      auto const& out = outcomes[r].output;
      BOOST_TEST_REQUIRE((!out.empty() && out.find("wrong") == std::string::npos),
                         "P=" << p << ": " << out);
      BOOST_TEST(std::stoull(out) > 10u,
                 "P=" << p << " rank " << r << " sent " << out << " messages from its pool");
    }
  }
}

BOOST_AUTO_TEST_CASE(threads_read_large_messages_from_the_pool_exactly) {
  for (int p : {2, 5}) {
    auto got = gcl::spawn<gcl::shm_transport>(
        p,
        [](auto& comm) {
          std::uint64_t from_pool = 0;
          auto wrong = exercise(comm, from_pool);
          return std::make_pair(wrong, from_pool);
        },
        with_pool(4 << 20));
    for (auto const& [wrong, from_pool] : got) {
      BOOST_TEST(wrong == "");
      BOOST_TEST(from_pool > 10u);
    }
  }
}

// Ring's scatter-reduce forwards each chunk it combines from ring to ring (reduce_and_forward),
// which begins with a plain send; from a pool buffer that send is an offer, which returns only
// once its receiver has read it, so every rank would wait in it for a rank waiting in its own
// (until each gave up polling and copied the other's offer aside: P = 2, 1 MiB took 4-5x the
// time). The transport says which sends are offers (`offers`), and a rank whose chunks are in
// its pool sends each step from there, read in place, and forwards nothing. The same ranks with
// ordinary buffers do forward (so the counter counts).
BOOST_AUTO_TEST_CASE(ring_over_pool_buffers_sends_from_the_pool_rather_than_forwarding) {
  for (int p : {2, 3, 4}) {
    auto opts = with_pool(1 << 20);
    opts.combine_bytes = 1;  // chunks combined as they arrive, which forwarding needs
    // No rank ever stops polling to sleep: one that may sleep first copies every message that
    // has arrived into its queue, and a message taken from the queue is combined there, not
    // forwarded, so on a loaded machine a rank with ordinary buffers could forward nothing.
    opts.spin = std::chrono::seconds{60};
    auto got = gcl::spawn<gcl::shm_transport>(
        p,
        [](auto& comm) {
          auto& t = comm.transport();
          int const size = comm.size(), me = comm.rank();
          std::size_t const n = 8192 * static_cast<std::size_t>(size);  // 32 KiB chunks
          auto pooled = t.template allocate<float>(n);
          std::vector<float> plain(n);
          int const left = (me + size - 1) % size;
          auto whole = std::span<float const>(pooled);
          bool const says = comm.offers(left, whole) &&
                            !comm.offers(left, whole.first(16)) &&  // below offer_bytes
                            !comm.offers(left, std::span<float const>(plain));
          bool exact = true;
          auto ring_is_exact = [&](auto& buf) {
            for (std::size_t i = 0; i < n; ++i) buf[i] = value(me, i);
            gcl::all_reduce(comm, buf, gcl::sum{}, gcl::ring{});
            for (std::size_t i = 0; i < n; ++i) {
              float s = 0;
              for (int r = 0; r < size; ++r) s += value(r, i);
              exact = exact && buf[i] == s;
            }
          };
          ring_is_exact(pooled);
          auto const from_pool = t.sent_from_pool();
          auto const forwarded_from_pool = t.bytes_forwarded();
          ring_is_exact(plain);
          return std::make_tuple(says, exact, from_pool, forwarded_from_pool,
                                 t.bytes_forwarded() - forwarded_from_pool);
        },
        opts);
    for (int r = 0; r < p; ++r) {
      auto const& [says, exact, from_pool, forwarded_from_pool, forwarded_plain] = got[r];
      BOOST_TEST(says, "P=" << p << " rank " << r << ": offers() misjudged a send");
      BOOST_TEST(exact, "P=" << p << " rank " << r << ": a result is wrong");
      // every scatter-reduce step sent from the pool
      BOOST_TEST(from_pool >= static_cast<std::uint64_t>(p - 1), "P=" << p << " rank " << r);
      BOOST_TEST(forwarded_from_pool == 0u, "P=" << p << " rank " << r);
      if (p > 2) BOOST_TEST(forwarded_plain > 0u, "P=" << p << " rank " << r);
    }
  }
}

// Only a message that lies wholly in the sender's pool is read there (its last bytes included);
// one from ordinary memory goes through the rings, and arrives intact. (The pool ends the
// segment: no message can start in it and run past its end.)
BOOST_AUTO_TEST_CASE(only_messages_in_the_pool_are_read_in_place) {
  auto got = gcl::spawn<gcl::shm_transport>(
      2,
      [](auto& comm) {
        auto& t = comm.transport();
        std::size_t const pool = t.config().pool_bytes;
        auto all = t.template allocate<std::byte>(pool);  // the whole pool
        std::vector<std::byte> outside(64 * 1024, std::byte{7});
        bool ok = true;
        auto all_are = [](auto const& v, std::byte b) {
          return std::all_of(v.begin(), v.end(), [&](std::byte x) { return x == b; });
        };
        if (comm.rank() == 0) {
          std::fill(all.begin(), all.end(), std::byte{3});
          comm.send(1, std::span<std::byte const>(outside));
          comm.send(1, std::span<std::byte const>(all.data() + pool - 32 * 1024, 32 * 1024));
          comm.send(1, std::span<std::byte const>(all.data(), 64 * 1024));
        } else {
          std::vector<std::byte> got(64 * 1024), tail(32 * 1024);
          comm.recv(0, got);
          ok = ok && all_are(got, std::byte{7});
          comm.recv(0, tail);
          ok = ok && all_are(tail, std::byte{3});
          comm.recv(0, got);
          ok = ok && all_are(got, std::byte{3});
        }
        return std::make_pair(ok, t.sent_from_pool());
      },
      with_pool(256 * 1024));
  BOOST_TEST(got[1].first);
  BOOST_TEST(got[0].second == 2u);  // the pool's last 32 KiB and its first 64; not the other
}

// A message from the pool smaller than `pool_offer_threshold()` streams through the rings as
// any other (read in place it holds its sender and leaves its lines in the receiver's cache:
// slower where the message fits its ring); from there on it is read in place. By default the
// threshold is above 256 KiB (or half a ring) where each rank has a core, `offer_bytes` where
// the ranks outnumber the cores.
BOOST_AUTO_TEST_CASE(pool_messages_below_the_offer_threshold_stream_through_the_rings) {
  gcl::shm_options o;
  o.size = 2;
  o.ring_bytes = 1 << 20;
  if (!gcl::detail::ranks_outnumber_cpus(2))
    BOOST_TEST(o.pool_offer_threshold() == (std::size_t{256} << 10) + 1);
  o.ring_bytes = 128 << 10;  // half a ring is less than 256 KiB
  if (!gcl::detail::ranks_outnumber_cpus(2))
    BOOST_TEST(o.pool_offer_threshold() == (std::size_t{64} << 10) + 1);
  o.size = 1 << 20;  // more ranks than this host has CPUs
  BOOST_TEST(o.pool_offer_threshold() == o.offer_bytes);
  o.pool_offer_bytes = 5;
  BOOST_TEST(o.pool_offer_threshold() == 5u);

  constexpr std::size_t threshold = 100000;
  auto opts = with_pool(1 << 20);
  opts.pool_offer_bytes = threshold;
  auto got = gcl::spawn<gcl::shm_transport>(
      2,
      [](auto& comm) {
        auto& t = comm.transport();
        auto below = t.template allocate<std::uint32_t>(threshold / 4 - 1);  // 99,996 bytes
        auto at = t.template allocate<std::uint32_t>(threshold / 4);
        std::uint64_t offered_after_first = 0;
        bool ok = true;
        if (comm.rank() == 0) {
          std::iota(below.begin(), below.end(), 7u);
          std::iota(at.begin(), at.end(), 9u);
          comm.send(1, below);
          offered_after_first = t.sent_from_pool();
          comm.send(1, at);
        } else {
          comm.recv(0, below);
          comm.recv(0, at);
          for (std::size_t i = 0; i < below.size(); ++i) ok = ok && below[i] == 7u + i;
          for (std::size_t i = 0; i < at.size(); ++i) ok = ok && at[i] == 9u + i;
        }
        return std::make_tuple(ok, offered_after_first, t.sent_from_pool());
      },
      opts);
  BOOST_TEST(std::get<0>(got[1]));
  BOOST_TEST(std::get<1>(got[0]) == 0u);  // below the threshold: through the rings
  BOOST_TEST(std::get<2>(got[0]) == 1u);  // at it: read in place
}

BOOST_AUTO_TEST_CASE(a_job_without_room_says_what_to_set) {
  auto message_of = [](std::size_t pool, std::size_t ask) {
    return gcl::spawn<gcl::shm_transport>(
        1,
        [&](auto& comm) -> std::string {
          try {
            auto b = comm.transport().template allocate<float>(ask);
          } catch (gcl::usage_error const& e) {
            return e.what();
          }
          return "";
        },
        with_pool(pool))[0];
  };
  auto none = message_of(0, 10);
  BOOST_TEST(none.find("no pool") != std::string::npos, none);
  BOOST_TEST(none.find("GCL_SHM_POOL_BYTES") != std::string::npos, none);
  auto small = message_of(64 * 1024, 64 * 1024);  // 256 KiB of floats in a 64 KiB pool
  BOOST_TEST(small.find("262144 bytes") != std::string::npos, small);
  BOOST_TEST(small.find("65536 bytes has 65536 free") != std::string::npos, small);
  BOOST_TEST(message_of(64 * 1024, 16 * 1024) == "");  // exactly the pool
  auto huge = message_of(64 * 1024, std::numeric_limits<std::size_t>::max() / 2);
  BOOST_TEST(huge.find("more bytes than memory has") != std::string::npos, huge);
  gcl::shm_options too_large;
  too_large.pool_bytes = (std::size_t{1} << 40) + 1;
  BOOST_CHECK_EXCEPTION(
      gcl::shm_transport{too_large}, gcl::usage_error, [](gcl::usage_error const& e) {
        return std::string(e.what()).find("pool_bytes must be at most") != std::string::npos;
      });
}

// Blocks come back to the pool when their buffers go, and neighbours merge again, so that the
// whole pool can be handed out in one piece afterwards; a buffer outlives its transport.
BOOST_AUTO_TEST_CASE(the_pool_takes_blocks_back_and_a_buffer_outlives_its_transport) {
  gcl::shm_buffer<int> kept;
  gcl::spawn<gcl::shm_transport>(
      1,
      [&](auto& comm) {
        auto& t = comm.transport();
        {
          auto a = t.template allocate<std::byte>(16 * 1024);
          auto b = t.template allocate<std::byte>(16 * 1024);
          auto c = t.template allocate<std::byte>(32 * 1024);
          BOOST_CHECK_THROW(t.template allocate<std::byte>(1), gcl::usage_error);  // full
          BOOST_TEST(b.data() == a.data() + 16 * 1024);
          a = {};
          c = {};
          auto d = t.template allocate<std::byte>(16 * 1024);  // first fit: where a was
          BOOST_TEST(d.data() == b.data() - 16 * 1024);
        }
        auto whole = t.template allocate<std::byte>(64 * 1024);  // all of it merged back
        BOOST_TEST(whole.size() == 64u * 1024);
        whole = {};
        kept = t.template allocate<int>(1000);
        BOOST_TEST(kept.in_pool());
        BOOST_TEST(std::all_of(kept.begin(), kept.end(), [](int v) { return v == 0; }));
      },
      with_pool(64 * 1024));
  std::iota(kept.begin(), kept.end(), 0);  // the transport is gone; the memory is not
  BOOST_TEST(kept[999] == 999);
}

BOOST_AUTO_TEST_CASE(pool_bytes_from_the_environment) {
  auto pool = [](char const* v) {
    return gcl::shm_options::from_env([&](char const* n) -> char const* {
             std::string_view name(n);
             if (name == "GCL_SHM_POOL_BYTES") return v;
             if (name == "GCL_WORLD_SIZE") return "1";
             if (name == "GCL_RANK") return "0";
             return nullptr;
           })
        .pool_bytes;
  };
  BOOST_TEST(pool("4096") == 4096u);
  BOOST_TEST(pool("64M") == std::size_t{64} << 20);
  BOOST_TEST(pool("2g") == std::size_t{2} << 30);
  BOOST_TEST(pool("") == 0u);
  for (char const* bad : {"12x", "-1", "M", "3KB", "2048G"}) {
    try {
      pool(bad);
      BOOST_ERROR("GCL_SHM_POOL_BYTES=" << bad << " was accepted");
    } catch (gcl::usage_error const& e) {
      BOOST_TEST(std::string(e.what()).find("GCL_SHM_POOL_BYTES='" + std::string(bad) + "'") !=
                 std::string::npos);
    }
  }
}
