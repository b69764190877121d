#define BOOST_TEST_MODULE transport_shm
#include <boost/test/unit_test.hpp>

#include "../support/error_of.hpp"
#include "../support/sendrecv_reduce_checks.hpp"

// shm_transport's semantics (doc/requirements/transport.md) over ranks that are threads of this
// process (shm_transport::group: the same rendezvous, segment and rings as processes): options
// from the environment, FIFO per (source, tag), messages to oneself, eager sends at every size
// on both large-message paths, timeouts and mismatches that name who and what, abort, counting
// equal to inproc's; the job token: two jobs at once do not meet, a second job with the same
// token is refused, and so is a stranger without it.

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gcl/algorithm/by_size.hpp>
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/barrier.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/log.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

static_assert(gcl::transport<gcl::shm_transport>);
static_assert(gcl::call_aware_transport<gcl::shm_transport>);
static_assert(gcl::sendrecv_transport<gcl::shm_transport>);
static_assert(gcl::combining_transport<gcl::shm_transport>);
static_assert(gcl::sharing_transport<gcl::shm_transport>);
static_assert(gcl::sharing_transport<gcl::counting<gcl::shm_transport>>);
static_assert(!gcl::sharing_transport<gcl::inproc_transport>);
static_assert(gcl::forwarding_transport<gcl::shm_transport>);
static_assert(gcl::forwarding_transport<gcl::counting<gcl::shm_transport>>);
static_assert(!gcl::forwarding_transport<gcl::inproc_transport>);
static_assert(gcl::group_transport<gcl::shm_transport>);
static_assert(gcl::group_transport<gcl::counting<gcl::shm_transport>>);

namespace {

using namespace std::chrono_literals;

gcl::shm_options with(std::chrono::milliseconds timeout, bool cma = true, std::size_t ring = 0) {
  gcl::shm_options o;
  o.timeout = timeout;
  o.cross_memory_attach = cma;
  o.ring_bytes = ring;
  return o;
}

std::vector<std::byte> pattern(int from, int to, int tag, int k, std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::byte>((from * 131 + to * 31 + tag * 7 + k * 3 + i) & 0xff);
  return v;
}

using gcl_test::error_of;

}  // namespace

// A rank that finds the job's abort being written waits for the reason, however long its writer
// is held up (descheduled on a loaded machine), up to the deadline: it used to give up after
// 1,000 yields, about a millisecond on an idle core, and report "another rank is failing"
// instead of the reason. A writer that never finishes (killed half-way) costs the deadline.
BOOST_AUTO_TEST_CASE(an_abort_being_written_is_waited_for_until_the_deadline) {
  using clock = std::chrono::steady_clock;
  alignas(64) std::atomic<std::uint32_t> state{1};
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
    state.store(2, std::memory_order_release);
  });
  BOOST_TEST(gcl::detail::settled_abort_state(state, clock::now() + std::chrono::minutes{1}) == 2u);
  writer.join();

  state.store(1);  // a writer that died half-way
  auto const deadline = clock::now() + std::chrono::milliseconds{20};
  BOOST_TEST(gcl::detail::settled_abort_state(state, deadline) == 1u);
  BOOST_TEST((clock::now() >= deadline));
  state.store(0);  // no abort: nothing to wait for
  BOOST_TEST(gcl::detail::settled_abort_state(state, clock::now() + std::chrono::minutes{1}) == 0u);
}

// Unset, cross-memory attach is not used, however many ranks share the CPUs (the measurement
// is in shm/options.hpp); the ring size is 4 MiB / P within [16 KiB, 1 MiB].
BOOST_AUTO_TEST_CASE(default_copy_path_and_ring_size) {
  gcl::shm_options o;
  BOOST_TEST(!o.cross_memory_attach.has_value());
  for (int p : {1, 2, 3, 4, 5, 8, 16, 64, 256, 512}) {
    o.size = p;
    BOOST_TEST(!o.uses_cross_memory_attach(), "P=" << p);
    // Rounded down to a multiple of 128 bytes, where messages start (P = 5: 838860 -> 838784).
    std::size_t const want =
        std::clamp<std::size_t>((std::size_t{4} << 20) / static_cast<std::size_t>(p), 16 * 1024,
                                1024 * 1024) /
        128 * 128;
    BOOST_TEST(o.ring_size() == want, "P=" << p);
  }
  // Small messages go round the start of each lap only where ranks share cores.
  for (int p : {1, 2, 3, 4, 5, 8, 16, 64}) {
    o.size = p;
    BOOST_TEST(o.rewind_window() == (gcl::detail::ranks_outnumber_cpus(p) ? 8192u : 0u), "P=" << p);
  }
  o.rewind_bytes = 0;
  BOOST_TEST(o.rewind_window() == 0u);
  o.rewind_bytes = 1000;
  BOOST_TEST(o.rewind_window() == 1000u);
  o.size = 1000;
  o.cross_memory_attach = false;
  BOOST_TEST(!o.uses_cross_memory_attach());
  o.size = 2;
  o.cross_memory_attach = true;
  BOOST_TEST(o.uses_cross_memory_attach());
}

BOOST_AUTO_TEST_CASE(options_from_the_environment) {
  std::map<std::string, std::string> env{{"GCL_RANK", "2"},
                                         {"GCL_WORLD_SIZE", "4"},
                                         {"GCL_TOKEN", "job-7"},
                                         {"GCL_TIMEOUT", "1.5"},
                                         {"GCL_SHM_CMA", "0"}};
  auto get = [&](char const* n) -> char const* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto o = gcl::shm_options::from_env(get);
  BOOST_TEST(o.rank == 2);
  BOOST_TEST(o.size == 4);
  BOOST_TEST(o.token == "job-7");
  BOOST_TEST(o.token_source == "GCL_TOKEN");
  BOOST_TEST(o.timeout.count() == 1500);
  BOOST_TEST((o.cross_memory_attach == false));
  BOOST_TEST(!o.uses_cross_memory_attach());
  BOOST_TEST(o.ring_size() == 1024u * 1024);  // 4 MiB / 4 ranks
  env["GCL_SHM_CMA"] = "1";
  BOOST_TEST(gcl::shm_options::from_env(get).uses_cross_memory_attach());
  env.erase("GCL_TOKEN");
  auto what = error_of([&] { (void)gcl::shm_options::from_env(get); });
  BOOST_TEST(what.find("GCL_TOKEN") != std::string::npos, what);
  env["GCL_TOKEN"] = "x";
  env["GCL_SHM_CMA"] = "yes";
  what = error_of([&] { (void)gcl::shm_options::from_env(get); });
  BOOST_TEST(what.find("GCL_SHM_CMA='yes'") != std::string::npos, what);
  env.erase("GCL_SHM_CMA");
  env["GCL_SHM_RING_BYTES"] = "65536";
  BOOST_TEST(gcl::shm_options::from_env(get).ring_size() == 65536u);
  // The same suffixes as GCL_SHM_POOL_BYTES (K, M, G: powers of 1024), within [4 KiB, 1 GiB].
  env["GCL_SHM_RING_BYTES"] = "4M";
  BOOST_TEST(gcl::shm_options::from_env(get).ring_size() == std::size_t{4} << 20);
  env["GCL_SHM_RING_BYTES"] = "1g";
  BOOST_TEST(gcl::shm_options::from_env(get).ring_size() == std::size_t{1} << 30);
  for (char const* bad : {"4095", "2G", "12x", "-1", "M", "64KB"}) {
    env["GCL_SHM_RING_BYTES"] = bad;
    what = error_of([&] { (void)gcl::shm_options::from_env(get); });
    BOOST_TEST(what.find("GCL_SHM_RING_BYTES='" + std::string(bad) + "'") != std::string::npos,
               what);
  }
  env.erase("GCL_SHM_RING_BYTES");
  BOOST_TEST(!gcl::shm_options::from_env(get).rewind_bytes.has_value());
  env["GCL_SHM_REWIND_BYTES"] = "0";
  BOOST_TEST((gcl::shm_options::from_env(get).rewind_bytes == std::size_t{0}));
  env["GCL_SHM_REWIND_BYTES"] = "16K";
  BOOST_TEST(gcl::shm_options::from_env(get).rewind_window() == 16384u);
  for (char const* bad : {"2G", "8x", "-1"}) {
    env["GCL_SHM_REWIND_BYTES"] = bad;
    what = error_of([&] { (void)gcl::shm_options::from_env(get); });
    BOOST_TEST(what.find("GCL_SHM_REWIND_BYTES='" + std::string(bad) + "'") != std::string::npos,
               what);
  }
  env.erase("GCL_SHM_REWIND_BYTES");
  // Unless GCL_SPIN_US says, the polling before a sleep follows the host's ranks and CPUs
  // (detail::default_spin): ranks that outnumber the cores still poll (tcp's would not),
  // yielding so that the ranks sharing a core take turns; ranks with a core of their own poll
  // for longer than a wake-up costs many times over.
  env["LOCAL_WORLD_SIZE"] = "4096";
  BOOST_TEST(!gcl::shm_options::from_env(get).spin.has_value());
  BOOST_TEST(gcl::detail::default_spin(1 << 20).count() > 0);
  BOOST_TEST((gcl::detail::default_spin(1) >= std::chrono::milliseconds(1)));
  env["GCL_SPIN_US"] = "0";
  BOOST_TEST(gcl::shm_options::from_env(get).spin.value().count() == 0);
  env["GCL_SPIN_US"] = "700";
  BOOST_TEST(gcl::shm_options::from_env(get).spin.value().count() == 700);
  // Ranks that outnumber the CPUs start spread over them unless GCL_SPREAD=0 (or the option).
  BOOST_TEST(!gcl::shm_options::from_env(get).spread_ranks.has_value());
  env["GCL_SPREAD"] = "0";
  BOOST_TEST((gcl::shm_options::from_env(get).spread_ranks == false));
  BOOST_TEST(!gcl::shm_options::from_env(get).spreads_ranks());
  env["GCL_SPREAD"] = "1";
  BOOST_TEST(gcl::shm_options::from_env(get).spreads_ranks());
  env["GCL_SPREAD"] = "on";
  what = error_of([&] { (void)gcl::shm_options::from_env(get); });
  BOOST_TEST(what.find("GCL_SPREAD='on'") != std::string::npos, what);
  env.erase("GCL_SPREAD");
  gcl::shm_options no_token;
  no_token.rank = 1;
  no_token.size = 2;
  BOOST_CHECK_THROW(gcl::shm_transport{no_token}, gcl::usage_error);
}

// Every rank sends to every rank (itself included) on two tags, at sizes from nothing to more
// than a ring, all before receiving anything, and receives the tags in the other order: eager
// at any size, FIFO per (source, tag), no order between tags.
BOOST_AUTO_TEST_CASE(fifo_per_tag_messages_to_oneself_and_eager_sends) {
  std::vector<std::size_t> const sizes{0, 1, 100, 70000, 300000};
  for (bool cma : {true, false}) {
    // Each rank returns its first wrong message ("" if none), asserted after the join (Boost.Test's
    // assertions are not thread-safe).
    auto wrong = gcl::spawn<gcl::shm_transport>(
        3,
        [&](auto& comm) {
          int const p = comm.size(), me = comm.rank();
          for (int tg : {1, 2})
            for (int to = 0; to < p; ++to)
              for (std::size_t k = 0; k < sizes.size(); ++k)
                comm.send(to, pattern(me, to, tg, static_cast<int>(k), sizes[k]), gcl::tag(tg));
          std::string first;
          for (int tg : {2, 1})
            for (int from = 0; from < p; ++from)
              for (std::size_t k = 0; k < sizes.size(); ++k) {
                std::vector<std::byte> in(sizes[k]);
                comm.recv(from, in, gcl::tag(tg));
                if (first.empty() && in != pattern(from, me, tg, static_cast<int>(k), sizes[k]))
                  first = "from " + std::to_string(from) + " tag " + std::to_string(tg) + " #" +
                          std::to_string(k);
              }
          return first;
        },
        with(60s, cma, 16 * 1024));
    for (int r = 0; r < 3; ++r)
      BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
                 "rank " << r << " cma " << cma << ": " << wrong[static_cast<std::size_t>(r)]);
  }
}

// Messages start on 128-byte boundaries of the ring, so that two never share a cache line:
// every size from 0 to 300 bytes, each rank sending all of them before receiving any, through a
// ring of 5000 bytes (4992 in use), which they wrap about seventeen times. Each arrives whole and
// in order, and a sender that pads never lets its receiver take padding for a header.
BOOST_AUTO_TEST_CASE(small_messages_of_every_size_wrap_a_ring_of_odd_size) {
  gcl::shm_options o = with(60s, false, 5000);
  BOOST_TEST(o.ring_size() == 4992u);
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [](auto& comm) {
        int const me = comm.rank(), peer = 1 - me;
        for (std::size_t n = 0; n <= 300; ++n)
          comm.send(peer, pattern(me, peer, 3, static_cast<int>(n), n), gcl::tag(3));
        for (std::size_t n = 0; n <= 300; ++n) {
          std::vector<std::byte> in(n);
          comm.recv(peer, in, gcl::tag(3));
          if (in != pattern(peer, me, 3, static_cast<int>(n), n))
            return "message of " + std::to_string(n) + " bytes";
        }
        return std::string{};
      },
      o);
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// A receiver learns that a message has come from the stamp in its header's first bytes (the
// stream position XOR the job's random key), polled where the next header will be. Before the
// sender writes it, that place holds an older message's payload: here one whose every word
// spells the stream position it will have one ring later, which a stamp without the key would
// be. The receiver polls it for 100 ms and must still wait for the real message.
BOOST_AUTO_TEST_CASE(payload_that_spells_stream_positions_is_never_taken_for_a_header) {
  namespace d = gcl::detail;
  constexpr std::size_t ring = 8192;
  auto start = [](std::size_t pos) { return d::round_to_line_pair(pos); };
  // X from stream position 0; Y after it, so long that the next header's place is one ring
  // after a word of X's payload. Neither header has an extension: sent before any collective,
  // their call is call_info{}, which a ring starts with as its named call.
  constexpr std::size_t x_bytes = 4096;
  std::size_t const x_payload = d::shm_payload_offset(sizeof(d::shm_message), x_bytes);
  std::size_t const y_at = start(x_payload + x_bytes);
  std::size_t const next = ring + 1024;  // where Z's header will be
  std::size_t const y_payload = y_at + d::shm_payload_offset(sizeof(d::shm_message), ring);
  std::size_t const y_bytes = next - y_payload;
  BOOST_REQUIRE(y_payload == y_at + d::shm_payload_offset(sizeof(d::shm_message), y_bytes));
  BOOST_REQUIRE(start(y_payload + y_bytes) == next);
  BOOST_REQUIRE(next - ring >= x_payload && next - ring + 8 <= x_payload + x_bytes);
  std::vector<std::uint64_t> x(x_bytes / 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = x_payload + 8 * i + ring;  // position + ring
  std::atomic<bool> polling{false};
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [&](auto& comm) -> std::string {
        std::vector<std::byte> y(y_bytes, std::byte{7});
        std::uint64_t z = 0x5eed;
        if (comm.rank() == 0) {
          comm.send(1, std::span<std::uint64_t const>(x), gcl::tag(1));
          comm.send(1, y, gcl::tag(1));
          while (!polling.load()) std::this_thread::yield();
          std::this_thread::sleep_for(100ms);  // rank 1 polls the stale payload meanwhile
          comm.send(1, std::span<std::uint64_t const>(&z, 1), gcl::tag(1));
          return {};
        }
        std::vector<std::uint64_t> x_in(x.size());
        std::vector<std::byte> y_in(y_bytes);
        comm.recv(0, x_in, gcl::tag(1));
        comm.recv(0, y_in, gcl::tag(1));
        if (x_in != x || y_in != y) return "X or Y arrived wrong";
        polling.store(true);
        std::uint64_t z_in = 0;
        comm.recv(0, std::span<std::uint64_t>(&z_in, 1), gcl::tag(1));
        return z_in == z ? std::string{} : "Z arrived as " + std::to_string(z_in);
      },
      with(10s, false, ring));
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

BOOST_AUTO_TEST_CASE(a_timeout_names_the_peer_and_the_call) {
  auto what = error_of([] {
    gcl::spawn<gcl::shm_transport>(
        2,
        [](auto& comm) {
          std::vector<float> v(10);
          if (comm.rank() == 0)
            comm.recv(1, v, gcl::tag{9});
          else
            comm.recv(0, v, gcl::tag{9});
        },
        with(300ms));
  });
  BOOST_TEST(what.find("timed out after 300 ms") != std::string::npos, what);
  BOOST_TEST(what.find("recv from rank") != std::string::npos, what);
  BOOST_TEST(what.find("40 bytes, tag 9") != std::string::npos, what);
}

BOOST_AUTO_TEST_CASE(mismatches_name_both_sides) {
  auto what = error_of([] {
    gcl::spawn<gcl::shm_transport>(
        2,
        [](auto& comm) {
          if (comm.rank() == 0) {
            comm.send(1, std::vector<int>(2), gcl::tag{3});
          } else {
            std::vector<int> v(1);
            comm.recv(0, v, gcl::tag{3});
          }
        },
        with(30s));
  });
  BOOST_TEST(what.find("expected 4 bytes") != std::string::npos, what);
  BOOST_TEST(what.find("sent 8 bytes") != std::string::npos, what);

  gcl::transport_error const* seen = nullptr;
  try {
    gcl::spawn<gcl::shm_transport>(
        3,
        [](auto& comm) {
          std::vector<int> v(10, comm.rank());
          if (comm.rank() == 0)
            gcl::broadcast(comm, v, 0, gcl::tree{});
          else
            gcl::all_reduce(comm, v, gcl::sum{}, gcl::tree{});
        },
        with(30s));
  } catch (gcl::transport_error const& e) {
    seen = &e;
    BOOST_TEST((e.code() == gcl::errc::mismatch), e.what());
    std::string w = e.what();
    BOOST_TEST(w.find("broadcast #1") != std::string::npos, w);
    BOOST_TEST(w.find("all_reduce #1") != std::string::npos, w);
  }
  BOOST_TEST(seen != nullptr);
}

// After a loop of the same collective, a call that differs in its operator or count is caught
// at its first message and described as each side made it, sequence number included; the
// operator where only the receiver of a one-way message can tell (reduce to the root at P = 2).
BOOST_AUTO_TEST_CASE(mismatches_after_a_loop_of_the_same_call_name_both_calls) {
  for (auto differs : {"op", "count"}) {
    std::string const what = error_of([&] {
      gcl::spawn<gcl::shm_transport>(
          2,
          [&](auto& comm) {
            std::vector<float> v(8, 1.0f);
            bool const odd = comm.rank() == 1;
            if (std::string_view(differs) == "op") {
              // Messages go one way only (rank 1 to the root): rank 0 alone can tell, from the
              // header of rank 1's message.
              for (int i = 0; i < 5; ++i) gcl::reduce(comm, std::span(v), 0, gcl::sum{});
              if (odd)
                gcl::reduce(comm, std::span(v), 0, gcl::max{});
              else
                gcl::reduce(comm, std::span(v), 0, gcl::sum{});
            } else {
              for (int i = 0; i < 5; ++i) gcl::all_reduce(comm, std::span(v), gcl::sum{});
              std::vector<float> w(odd ? 9 : 8, 1.0f);
              gcl::all_reduce(comm, std::span(w), gcl::sum{});
            }
          },
          with(30s));
    });
    if (std::string_view(differs) == "op") {
      BOOST_TEST(what.find("reduce #6") != std::string::npos, what);
      BOOST_TEST(what.find("max, 8 x float32, root 0") != std::string::npos, what);
      BOOST_TEST(what.find("sum, 8 x float32") != std::string::npos, what);
    } else {
      BOOST_TEST(what.find("all_reduce #6") != std::string::npos, what);
      BOOST_TEST(what.find("sum, 9 x float32") != std::string::npos, what);
      BOOST_TEST(what.find("sum, 8 x float32") != std::string::npos, what);
    }
  }
}

// In a ring of 4 KiB, messages of every size from 0 to 300 bytes (headers and payloads at every
// offset), and some larger than the ring, wrap it many times, both ways at once, and arrive
// whole and in order, within one call and across calls.
BOOST_AUTO_TEST_CASE(messages_of_every_size_wrap_a_small_ring) {
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [](auto& comm) {
        int const peer = 1 - comm.rank();
        std::string first;
        for (int k = 0; k < 1200; ++k) {
          std::size_t const n = k % 97 == 0 ? 5000 + static_cast<std::size_t>(k) : k % 301;
          std::vector<std::byte> in(n);
          comm.sendrecv(peer, pattern(comm.rank(), peer, 1, k, n), peer, in, gcl::tag{1});
          if (first.empty() && in != pattern(peer, comm.rank(), 1, k, n))
            first = "message " + std::to_string(k) + " of " + std::to_string(n) + " bytes";
          if (k % 100 == 0) gcl::barrier(comm);  // messages of a collective between them
        }
        return first;
      },
      with(60s, false, 4096));
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// A message larger than its ring streams: its header is stamped before all of its payload is
// written, and the receiver, polling the stamp, reads the payload only as far as the head that
// the sender publishes says. Rank 1 waits in its receive, polling, while rank 0 stamps each
// header (rank 0 sends the next message when rank 1 has answered the last); every message must
// arrive whole. A head read from before the header, taken at its word, would hand over bytes
// not yet written: wrong data, which ThreadSanitizer also reports as a race.
BOOST_AUTO_TEST_CASE(a_message_larger_than_its_ring_is_read_only_as_far_as_written) {
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [](auto& comm) {
        std::string first;
        std::byte answer{};
        for (int k = 0; k < 2000; ++k) {
          std::size_t const n = 4097 + static_cast<std::size_t>(k) * 37 % 8000;
          if (comm.rank() == 0) {
            comm.send(1, pattern(0, 1, 1, k, n), gcl::tag{1});
            comm.recv(1, std::span(&answer, 1), gcl::tag{2});
            continue;
          }
          std::vector<std::byte> in(n);
          comm.recv(0, in, gcl::tag{1});
          if (first.empty() && in != pattern(0, 1, 1, k, n))
            first = "message " + std::to_string(k) + " of " + std::to_string(n) + " bytes";
          comm.send(0, std::span(&answer, 1), gcl::tag{2});
        }
        return first;
      },
      with(60s, false, 4096));
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// The one mapping of a job's segment in this process (ranks that are threads share it): where
// /proc/self/maps shows the memfd from its first byte. Null if there is not exactly one.
std::byte* the_mapped_segment() {
  std::ifstream maps("/proc/self/maps");
  std::byte* found = nullptr;
  int mappings = 0;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, mode, offset;
    fields >> range >> mode >> offset;
    if (line.find("memfd:gcl-shm") == std::string::npos || std::stoull(offset, nullptr, 16) != 0)
      continue;
    found =
        reinterpret_cast<std::byte*>(std::stoull(range.substr(0, range.find('-')), nullptr, 16));
    ++mappings;
  }
  return mappings == 1 ? found : nullptr;
}

// The receiver's side of the same rule, with the sender's stores in the order the test
// chooses: rank 0 (the test's hand, not its transport) stamps a header of a message that
// streams and publishes its payload only 200 ms later. Rank 1, whose receive is posted, must
// wait for the head and then take the payload whole; taking it at the stamp, with the head of
// the message before, would hand over bytes not yet written.
BOOST_AUTO_TEST_CASE(a_stamped_header_is_read_no_further_than_its_published_head) {
  namespace d = gcl::detail;
  constexpr std::size_t ring = 8192;
  constexpr std::size_t bytes = 1000;
  std::atomic<int> received{0};
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [&](auto& comm) -> std::string {
        if (comm.rank() == 1) {
          std::vector<std::byte> in(bytes);
          comm.recv(0, in, gcl::tag{1});
          if (in != pattern(0, 1, 1, 0, bytes)) return "A arrived wrong";
          received.store(1);
          comm.recv(0, in, gcl::tag{1});
          received.store(2);
          return in == pattern(0, 1, 1, 1, bytes) ? std::string{} : "B arrived wrong";
        }
        // A, written whole by the transport: its header at stream position 0, the head after it.
        comm.send(1, pattern(0, 1, 1, 0, bytes), gcl::tag{1});
        auto const give_up = std::chrono::steady_clock::now() + 20s;  // rank 1 may fail
        auto wait_for = [&](int stage) {
          while (received.load() < stage && std::chrono::steady_clock::now() < give_up)
            std::this_thread::yield();
          return received.load() >= stage;
        };
        if (!wait_for(1)) return "rank 1 did not receive A";
        auto* base = the_mapped_segment();
        if (base == nullptr) return "not one mapping of the segment in /proc/self/maps";
        auto const key = reinterpret_cast<d::shm_header const*>(base)->stamp_key;
        auto& pair = *reinterpret_cast<d::shm_pair_block*>(
            base + d::shm_segment::pair_offset(0, 1, 2, ring));
        auto* to_1 = base + d::shm_segment::ring_offset(0, 1, 2, ring);
        auto& bell =
            reinterpret_cast<d::shm_rank_block*>(base + d::shm_segment::rank_offset(1))->bell;
        auto ring_bell = [&] {
          bell.fetch_add(1, std::memory_order_release);
          d::futex_wake_all(bell);
        };
        // A's header has no extension: sent before any collective, its call is call_info{},
        // which a ring starts with as its named call.
        d::shm_message h;
        std::memcpy(&h, to_1, sizeof h);
        auto const head = pair.head.load(std::memory_order_acquire);
        if (h.size != bytes || h.complete != 1 || h.extended != 0 ||
            head != d::shm_payload_offset(sizeof h, bytes) + bytes)
          return "A's header or the head is not where the layout says";
        // B: A's header (the same call), as a message that streams, at the next message's place.
        auto const at = d::round_to_line_pair(head);
        auto const payload_at = at + d::shm_payload_offset(sizeof h, bytes);
        h.complete = 0;
        h.extended = 0;
        std::memcpy(to_1 + at + sizeof h.stamp,
                    reinterpret_cast<std::byte const*>(&h) + sizeof h.stamp,
                    sizeof h - sizeof h.stamp);
        d::stamp_at(to_1, ring, at).store(at ^ key, std::memory_order_release);
        ring_bell();
        std::this_thread::sleep_for(200ms);
        std::string early =
            received.load() == 2 ? "rank 1 took B before its payload was published" : "";
        auto const b = pattern(0, 1, 1, 1, bytes);
        std::memcpy(to_1 + payload_at, b.data(), bytes);
        pair.head.store(payload_at + bytes, std::memory_order_release);
        ring_bell();
        if (!wait_for(2)) return "rank 1 did not receive B";
        return early;
      },
      with(10s, false, ring));
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// Small messages go round the first bytes of each lap of their ring (shm_options::rewind_bytes):
// rank 0 sends rank 1 a message of `bytes` and rank 1 answers it, 300 times, through rings of
// 8 KiB with a window of 1 KiB. Messages of 4 bytes (a line pair each in the stream) then start
// only in the first 1152 bytes of a lap and take a new lap every ninth message: the ring's head
// ends more than 30 laps on, its offset in the lap within the window. Without the window, and
// for messages over 1 KiB, every message follows the last: the head is exactly the messages'
// bytes. Every message arrives whole either way.
BOOST_AUTO_TEST_CASE(small_messages_go_round_the_start_of_each_lap) {
  namespace d = gcl::detail;
  constexpr std::size_t ring = 8192;
  constexpr int rounds = 300;
  struct outcome {
    std::string wrong;
    std::uint64_t head = 0;  // of the ring from rank 0 to rank 1
  };
  auto run = [&](std::optional<std::size_t> window, std::size_t bytes) {
    auto o = with(10s, false, ring);
    o.rewind_bytes = window;
    auto out = gcl::spawn<gcl::shm_transport>(
        2,
        [&](auto& comm) {
          outcome r;
          int const me = comm.rank(), peer = 1 - me;
          std::vector<std::byte> in(bytes);
          for (int k = 0; k < rounds && r.wrong.empty(); ++k) {
            if (me == 0) comm.send(1, pattern(0, 1, 5, k, bytes), gcl::tag(5));
            comm.recv(peer, in, gcl::tag(5));
            if (in != pattern(peer, me, 5, k, bytes))
              r.wrong = "message " + std::to_string(k) + " of " + std::to_string(bytes) + " bytes";
            if (me == 1) comm.send(0, pattern(1, 0, 5, k, bytes), gcl::tag(5));
          }
          gcl::barrier(comm);
          if (me == 0) {
            auto* base = the_mapped_segment();
            if (base == nullptr) return outcome{"not one mapping of the segment", 0};
            r.head = reinterpret_cast<d::shm_pair_block const*>(
                         base + d::shm_segment::pair_offset(0, 1, 2, ring))
                         ->head.load(std::memory_order_acquire);
          }
          return r;
        },
        o);
    for (int r = 0; r < 2; ++r)
      BOOST_TEST(out[static_cast<std::size_t>(r)].wrong.empty(),
                 "rank " << r << ": " << out[static_cast<std::size_t>(r)].wrong);
    return out[0].head;
  };
  // A 4-byte message with its 32-byte header takes one line pair of the stream; the barrier
  // adds at most one more message from rank 0 to rank 1.
  auto const rewound = run(std::size_t{1024}, 4);
  BOOST_TEST(rewound / ring > 30u, "head " << rewound);
  BOOST_TEST(rewound % ring < 1024u + 128u, "head " << rewound);
  auto const straight = run(std::size_t{0}, 4);
  BOOST_TEST(straight <= (rounds + 2) * 128u, "head " << straight);
  BOOST_TEST(straight >= (rounds - 1) * 128u, "head " << straight);
  // A window of one byte: every small message after which the rest of the lap is free to skip
  // (here every other one) ends its lap.
  auto const every = run(std::size_t{1}, 4);
  BOOST_TEST(every / ring > 100u, "head " << every);
  // Over 1 KiB: never rewound, whatever the window.
  auto const large = run(std::size_t{1024}, 1100);
  BOOST_TEST(large < (rounds + 2) * 1280u, "head " << large);
}

// A header carries the sequence of its sender's call, and the rest of the call only in an
// extension when that differs from the last call named on the ring: rank 0's ring to rank 1,
// after four 4-byte all_reduces (direct: one message each way per call) and then one of
// another count, holds five headers, of which the first and the last are extended; then a
// point-to-point message and two more of the other count: extended, extended, not. Every
// payload of 4 bytes sits in its header's cache line, and every value arrives.
BOOST_AUTO_TEST_CASE(a_collective_called_in_a_loop_names_its_call_once_per_ring) {
  namespace d = gcl::detail;
  constexpr std::size_t ring = 8192;
  auto wrong = gcl::spawn<gcl::shm_transport>(
      2,
      [&](auto& comm) -> std::string {
        for (int k = 0; k < 4; ++k) {
          int v = comm.rank() + k;
          gcl::all_reduce(comm, std::span(&v, 1), gcl::sum{}, gcl::direct{});
          if (v != 1 + 2 * k) return "call " + std::to_string(k) + " gave " + std::to_string(v);
        }
        std::array<int, 2> w{comm.rank(), 10};
        gcl::all_reduce(comm, std::span(w), gcl::sum{}, gcl::direct{});
        if (w != std::array<int, 2>{1, 20}) return "the call of two ints was wrong";
        // A point-to-point message between collectives is named (its call is the reset one,
        // which the loop above never sent under), and the collective after it named again.
        if (comm.rank() == 0) comm.send(1, 42, gcl::tag{3});
        if (comm.rank() == 1 && comm.template recv<int>(0, gcl::tag{3}) != 42)
          return "the point-to-point message was wrong";
        for (int k = 0; k < 2; ++k) {
          w = {comm.rank(), 10};
          gcl::all_reduce(comm, std::span(w), gcl::sum{}, gcl::direct{});
          if (w != std::array<int, 2>{1, 20}) return "a call of two ints after it was wrong";
        }
        if (comm.rank() == 1) return {};
        auto* base = the_mapped_segment();
        if (base == nullptr) return "not one mapping of the segment in /proc/self/maps";
        auto const key = reinterpret_cast<d::shm_header const*>(base)->stamp_key;
        auto const* to_1 = base + d::shm_segment::ring_offset(0, 1, 2, ring);
        std::string extended;
        std::uint64_t at = 0;
        while (d::stamp_at(to_1, ring, at).load(std::memory_order_acquire) == (at ^ key)) {
          d::shm_message h;
          std::memcpy(&h, to_1 + at, sizeof h);
          extended += h.extended != 0 ? 'x' : '-';
          auto const header = sizeof h + (h.extended != 0 ? sizeof(d::shm_message_extension) : 0);
          auto const payload = d::shm_payload_offset(header, h.size);
          if (h.size == sizeof(int) && payload != header)
            return "a 4-byte payload at " + std::to_string(payload) + ", after a header of " +
                   std::to_string(header) + " bytes";
          at = h.rewinds != 0 ? d::round_up(at + payload + h.size, ring)
                              : d::round_to_line_pair(at + payload + h.size);
        }
        return extended == "x---xxx-" ? std::string{}
                                      : "headers (x: extended) " + extended + ", not x---xxx-";
      },
      with(10s, false, ring));
  for (int r = 0; r < 2; ++r)
    BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
               "rank " << r << ": " << wrong[static_cast<std::size_t>(r)]);
}

// A large message that arrives while its receiver waits for another is not copied where it
// arrives: in its ring, it waits there, and read from its sender's memory, it waits there
// uncopied, holding its sender; the receive that takes it copies it once, straight into its
// buffer (or combines it, for sendrecv_reduce). Only one larger than its ring is queued: its
// sender needs the room, so it is copied into the queue and then into the receive (two copies,
// counted by bytes_queued). Rank 0 waits for rank 2, which sends only after rank 1's message to
// rank 0 is on its way (streamed: rank 1 tells rank 2 once its send has returned; offered: rank
// 1 cannot, as its send returns only when rank 0 has copied the message, so rank 2 waits
// 200 ms, and a header later than that finds the receive posted, which queues nothing either).
// A spin longer than the test keeps rank 0 from sleeping, which would copy the offer (and the
// message in the ring) into the queue to release rank 1.
BOOST_AUTO_TEST_CASE(a_message_read_from_its_sender_waits_there_for_its_receive) {
  std::size_t const n = 75000;  // 300,000 bytes
  enum class path { streamed, streamed_larger_than_its_ring, offered, offered_and_combined };
  for (path how : {path::streamed, path::streamed_larger_than_its_ring, path::offered,
                   path::offered_and_combined}) {
    bool const offered = how == path::offered || how == path::offered_and_combined;
    bool const larger = how == path::streamed_larger_than_its_ring;
    auto o = with(60s, offered, larger ? 64 * 1024 : 0);
    o.spin = std::chrono::microseconds{std::chrono::seconds{60}};
    o.combine_bytes = 1;
    auto result = gcl::spawn<gcl::shm_transport>(
        3,
        [&](auto& comm) -> std::pair<std::string, std::uint64_t> {
          std::vector<std::uint32_t> mine(n), theirs(n);
          for (std::size_t i = 0; i < n; ++i)
            mine[i] = gcl_test::element_of<std::uint32_t>(comm.rank(), 0, i);
          if (comm.rank() == 1) {
            if (how == path::offered_and_combined)
              comm.sendrecv(0, std::span<std::uint32_t const>(mine), 0, theirs, gcl::tag{5});
            else
              comm.send(0, std::span<std::uint32_t const>(mine), gcl::tag{5});
            if (!offered) comm.send(2, 1, gcl::tag{7});
          } else if (comm.rank() == 2) {
            if (offered)
              std::this_thread::sleep_for(200ms);
            else
              (void)comm.template recv<int>(1, gcl::tag{7});
            comm.send(0, 2, gcl::tag{6});
          } else {
            (void)comm.template recv<int>(2, gcl::tag{6});
            auto acc = mine;
            if (how == path::offered_and_combined)
              comm.sendrecv_reduce(1, std::span<std::uint32_t const>(mine), 1, std::span(acc),
                                   gcl_test::affine_mix{}, gcl::received_operand::right,
                                   gcl::tag{5});
            else
              comm.recv(1, acc, gcl::tag{5});
            for (std::size_t i = 0; i < n; ++i) {
              auto const sent = gcl_test::element_of<std::uint32_t>(1, 0, i);
              auto const want =
                  how == path::offered_and_combined ? gcl_test::affine_mix{}(mine[i], sent) : sent;
              if (acc[i] != want) return {"element " + std::to_string(i) + " is wrong", 0};
            }
          }
          return {"", comm.transport().bytes_queued()};
        },
        o);
    int const mode = static_cast<int>(how);
    BOOST_TEST(result[0].first.empty(), "path " << mode << ": " << result[0].first);
    // Rank 2's 4 bytes are queued too if they arrive before rank 0 has started its receive.
    auto const queued = result[0].second;
    BOOST_TEST((larger ? queued >= n * 4 : queued < n * 4),
               "path " << mode << ": " << queued << " bytes queued");
  }
}

// spawn aborts the group when a rank throws: a rank blocked in recv (60 s timeout) is released
// by the abort, before the thrower's transport closes (which would tell it that rank 1 ended
// its job: a consequence, which spawn once rethrew now and then for the cause).
BOOST_AUTO_TEST_CASE(abort_releases_a_blocked_rank) {
  for (int round = 0; round < 20; ++round) {
    std::string released;  // rank 0's error
    auto what = error_of([&] {
      gcl::spawn<gcl::shm_transport>(
          2,
          [&](auto& comm) {
            std::vector<float> v(10);
            if (comm.rank() == 1) throw std::runtime_error("rank 1 gives up");
            try {
              comm.recv(1, v, gcl::tag{1});
            } catch (gcl::transport_error const& e) {
              released =
                  std::string(e.code() == gcl::errc::aborted ? "aborted|" : "other|") + e.what();
              throw;
            }
          },
          with(60s));
    });
    BOOST_TEST(what == "rank 1 gives up", "round " << round);
    BOOST_TEST(released.starts_with("aborted|"), "round " << round << ": " << released);
  }
}

// counting<> sees the same messages, sizes and rounds over shm as over inproc, but for ring's
// all-gather, one round over shm (share_with_all) where inproc forwards chunks for P - 1.
// sendrecv_reduce combines as the message arrives on every path a message takes: drained from
// a 16 KiB ring in pieces that cut 12-byte elements in two (cross-memory attach off), copied
// out of the sender's memory (on), and from a queue, where a message that arrived before its
// receive was posted waits.
BOOST_AUTO_TEST_CASE(sendrecv_reduce_combines_from_the_ring_the_sender_and_the_queue) {
  std::vector<std::size_t> const counts{0, 1, 3, 1000, 30000};
  for (bool cma : {true, false}) {
    auto every = with(60s, cma, 16 * 1024);
    every.combine_bytes = 1;  // not only from 4 MiB, the default
    // Offered messages combined straight from the sender's buffer, and copied out first.
    for (std::size_t copied_out_below : {std::size_t{1}, std::size_t{1} << 30}) {
      every.combine_in_place_bytes = copied_out_below;
      auto wrong = gcl::spawn<gcl::shm_transport>(
          3, [&](auto& comm) { return gcl_test::check_sendrecv_reduce(comm, counts); }, every);
      for (int r = 0; r < 3; ++r)
        BOOST_TEST(wrong[static_cast<std::size_t>(r)].empty(),
                   "rank " << r << " cma " << cma << " copied out below " << copied_out_below
                           << ": " << wrong[static_cast<std::size_t>(r)]);
    }
    // Rank 1 sends first; rank 0 takes it off the ring into its queue while it waits for a
    // later message of another tag, and only then posts the sendrecv_reduce it is for.
    auto queued = gcl::spawn<gcl::shm_transport>(
        2,
        [&](auto& comm) -> std::string {
          using gcl_test::triple;
          std::size_t const n = 30000;
          int const me = comm.rank(), peer = 1 - me;
          std::vector<triple> out(n), acc(n), theirs(n);
          for (std::size_t i = 0; i < n; ++i) {
            out[i] = gcl_test::element_of<triple>(me, 0, i);
            acc[i] = gcl_test::element_of<triple>(me, 1, i);
          }
          if (me == 1) {
            comm.send(0, std::span<triple const>(out), gcl::tag{5});
            comm.send(0, 7, gcl::tag{6});
            comm.recv(0, theirs, gcl::tag{5});
            for (std::size_t i = 0; i < n; ++i)
              if (!(theirs[i] == gcl_test::element_of<triple>(0, 0, i)))
                return "rank 0's message is wrong at element " + std::to_string(i);
            return "";
          }
          (void)comm.template recv<int>(1, gcl::tag{6});
          comm.sendrecv_reduce(peer, std::span<triple const>(out), peer, std::span<triple>(acc),
                               gcl_test::affine_mix{}, gcl::received_operand::left, gcl::tag{5});
          for (std::size_t i = 0; i < n; ++i)
            if (!(acc[i] == gcl_test::affine_mix{}(gcl_test::element_of<triple>(1, 0, i),
                                                   gcl_test::element_of<triple>(0, 1, i))))
              return "element " + std::to_string(i) + " is wrong";
          return "";
        },
        every);
    for (int r = 0; r < 2; ++r)
      BOOST_TEST(
          queued[static_cast<std::size_t>(r)].empty(),
          "queued, rank " << r << " cma " << cma << ": " << queued[static_cast<std::size_t>(r)]);
  }
}

// reduce_and_forward's contract: every rank sends a message to its left neighbour, combines
// what its right neighbour sends with its own buffer and forwards the result to the left,
// then receives what its right neighbour forwarded. With an operator that is not commutative, on
// both operand sides; a 4-byte element (combined from ring to ring, in pieces as small as a
// 16 KiB ring allows, and taken up again after its ring ran out of room) and a 12-byte one
// (which the transport declines: received, reduced and sent by the communicator).
BOOST_AUTO_TEST_CASE(reduce_and_forward_sends_on_what_it_combines) {
  using gcl_test::affine_mix;
  using gcl_test::element_of;
  using gcl_test::triple;
  auto check = [](auto& comm, auto type, std::size_t n, gcl::received_operand side) -> std::string {
    using T = typename decltype(type)::type;
    int const p = comm.size(), me = comm.rank();
    int const left = (me + p - 1) % p, right = (me + 1) % p, far = (me + 2) % p;
    std::vector<T> out(n), acc(n), got(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = element_of<T>(me, 0, i);
      acc[i] = element_of<T>(me, 1, i);
    }
    comm.send(left, std::span<T const>(out), gcl::tag{3});
    comm.reduce_and_forward(right, std::span<T>(acc), left, affine_mix{}, side, gcl::tag{3});
    comm.recv(right, got, gcl::tag{3});
    for (std::size_t i = 0; i < n; ++i) {
      T const theirs = element_of<T>(right, 1, i), sent = element_of<T>(far, 0, i);
      T const want = side == gcl::received_operand::right ? affine_mix{}(theirs, sent)
                                                          : affine_mix{}(sent, theirs);
      if (!(got[i] == want))
        return std::to_string(sizeof(T)) + "-byte elements, " + std::to_string(n) +
               " of them: element " + std::to_string(i) + " is wrong";
    }
    return "";
  };
  for (std::size_t ring : {std::size_t{0}, std::size_t{16 * 1024}}) {
    auto o = with(60s, false, ring);
    o.combine_bytes = 1;
    for (int p : {2, 3, 4}) {
      auto result = gcl::spawn<gcl::shm_transport>(
          p,
          [&](auto& comm) -> std::pair<std::string, std::uint64_t> {
            for (auto side : {gcl::received_operand::right, gcl::received_operand::left})
              for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{70000}}) {
                auto wrong = check(comm, std::type_identity<std::uint32_t>{}, n, side);
                if (wrong.empty()) wrong = check(comm, std::type_identity<triple>{}, n, side);
                if (!wrong.empty()) return {wrong, 0};
              }
            return {"", comm.transport().bytes_forwarded()};
          },
          o);
      for (int r = 0; r < p; ++r) {
        BOOST_TEST_INFO("P=" << p << " ring " << ring << " rank " << r);
        BOOST_TEST(result[static_cast<std::size_t>(r)].first.empty(),
                   result[static_cast<std::size_t>(r)].first);
        // 4-byte elements go from ring to ring: where the ring has room for what the rank
        // sent before and a piece more, the first piece at least (with 16 KiB rings, how much
        // depends on how the ranks interleave).
        if (ring == 0) BOOST_TEST(result[static_cast<std::size_t>(r)].second > 0u);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(counting_counts_the_same_messages_as_on_inproc) {
  auto run = [](auto tag_type, int p, std::size_t n, auto alg) {
    using T = typename decltype(tag_type)::type;
    typename T::options o{};
    o.timeout = 60s;
    auto out = gcl::spawn<gcl::counting<T>>(
        p,
        [&](auto& comm) {
          std::vector<std::int64_t> v(n, comm.rank() + 1);
          gcl::all_reduce(comm, v, gcl::sum{}, alg);
          return std::pair(v, comm.transport().stats());
        },
        o);
    gcl::transport_stats total;
    std::vector<std::vector<std::int64_t>> results;
    for (auto const& [v, s] : out) {
      total += s;
      results.push_back(v);
    }
    return std::pair(results, total);
  };
  auto both = [&](int p, std::size_t n, auto alg, char const* name) {
    auto [ri, si] = run(std::type_identity<gcl::inproc_transport>{}, p, n, alg);
    auto [rs, ss] = run(std::type_identity<gcl::shm_transport>{}, p, n, alg);
    BOOST_TEST_INFO(name << " P=" << p << " n=" << n);
    BOOST_TEST((ri == rs));
    BOOST_TEST(si.messages_sent == ss.messages_sent);
    BOOST_TEST(si.bytes_sent == ss.bytes_sent);
    BOOST_TEST(si.messages_received == ss.messages_received);
    BOOST_TEST(si.bytes_received == ss.bytes_received);
    bool const shared = std::string_view(name) == "ring" && p > 2;
    if (shared) BOOST_TEST(si.rounds == 2 * (p - 1));
    BOOST_TEST(ss.rounds == (shared ? p : si.rounds));
    BOOST_TEST((si.sent_sizes == ss.sent_sizes));
  };
  for (int p : {1, 2, 3, 5})
    for (std::size_t n : {std::size_t{1001}, std::size_t{40000}}) {
      both(p, n, gcl::tree{}, "tree");
      both(p, n, gcl::ring{}, "ring");
      both(p, n, gcl::direct{}, "direct");
      both(p, n, gcl::parameter_server{}, "parameter_server");
      both(p, n, gcl::recursive_doubling{}, "recursive_doubling");
      both(p, n, gcl::halving_doubling{}, "halving_doubling");
    }
}

// share_with_all: every rank's message reaches every other, whatever their sizes (one rank's
// empty), in one round; a message larger than the share area is refused on every rank, having
// sent nothing (the next message on the same tag is the one that comes); a sub-communicator's
// ring all_reduce takes it among its own ranks only.
BOOST_AUTO_TEST_CASE(share_with_all_reaches_every_peer_or_sends_nothing) {
  for (int p : {3, 5}) {
    auto errors = gcl::spawn<gcl::counting<gcl::shm_transport>>(
        p,
        [&](auto& comm) -> std::string {
          int const me = comm.rank();
          auto size_of = [](int r) { return static_cast<std::size_t>(r) * 1000 + 1; };
          auto out = pattern(me, 0, 1, 0, me == 1 ? 0 : size_of(me));
          std::vector<std::vector<std::byte>> in(static_cast<std::size_t>(p));
          for (int r = 0; r < p; ++r)
            if (r != me) in[static_cast<std::size_t>(r)].resize(r == 1 ? 0 : size_of(r));
          if (!comm.share_with_all(std::span<std::byte const>(out), [&](int r) {
                return std::span(in[static_cast<std::size_t>(r)]);
              }))
            return "refused a message that fits";
          for (int r = 0; r < p; ++r)
            if (r != me &&
                in[static_cast<std::size_t>(r)] != pattern(r, 0, 1, 0, r == 1 ? 0 : size_of(r)))
              return "rank " + std::to_string(r) + "'s message is wrong";
          auto const s = comm.transport().stats();
          if (s.messages_sent != static_cast<std::uint64_t>(p - 1) ||
              s.messages_received != static_cast<std::uint64_t>(p - 1) || s.rounds != 1)
            return "counted " + std::to_string(s.messages_sent) + " sent, " +
                   std::to_string(s.messages_received) + " received in " +
                   std::to_string(s.rounds) + " rounds";

          gcl::shm_options sized;
          sized.size = p;
          std::size_t const room = (sized.ring_size() / 2 + 4096 + 4095) / 4096 * 4096;
          std::vector<std::byte> large(room + 1), small(16);
          std::vector<std::vector<std::byte>> ins(static_cast<std::size_t>(p), small);
          // Only rank 0's own message is too large: the others refuse for the one they receive.
          if (comm.share_with_all(std::span<std::byte const>(me == 0 ? large : small), [&](int r) {
                return r == 0 ? std::span(large) : std::span(ins[static_cast<std::size_t>(r)]);
              }))
            return "shared " + std::to_string(room + 1) + " bytes, more than the share area";
          int const left = (me + p - 1) % p, right = (me + 1) % p;
          int got = -1;
          comm.sendrecv(right, me, left, got);
          if (got != left) return "after the refusal, received " + std::to_string(got);

          auto sub = *comm.split(me % 2, me);
          std::vector<std::int64_t> v(30001, me + 1);
          gcl::all_reduce(sub, v, gcl::sum{}, gcl::ring{});
          std::int64_t want = 0;
          for (int r = me % 2; r < p; r += 2) want += r + 1;
          for (auto x : v)
            if (x != want) return "the sub-communicator's sum is " + std::to_string(x);
          auto const ss = sub.stats();
          if (ss.rounds != (sub.size() > 2 ? sub.size() : 2 * (sub.size() - 1)))
            return "the sub-communicator's ring took " + std::to_string(ss.rounds) + " rounds";
          return "";
        },
        with(60s));
    for (int r = 0; r < p; ++r)
      BOOST_TEST(errors[static_cast<std::size_t>(r)].empty(),
                 "P=" << p << " rank " << r << ": " << errors[static_cast<std::size_t>(r)]);
  }
}

namespace {

// One rank's view of an all_reduce over shm: whether its sum came out exact, how many messages
// it sent in how many rounds (they tell which algorithm ran), and what its transport says of
// the cores.
struct rank_view {
  bool exact = false;
  std::pair<std::uint64_t, int> messages;
  bool share_cores = false;
  bool crowd_cores = false;
};

// One all_reduce of `count` int64 (rank r gives r + 1) on P ranks as threads over one segment,
// counted.
template <class Alg>
std::vector<rank_view> counted_all_reduce(int p, std::size_t count, Alg alg) {
  gcl::shm_options o;
  o.timeout = 60s;
  return gcl::spawn<gcl::counting<gcl::shm_transport>>(
      p,
      [&](auto& comm) {
        std::vector<std::int64_t> v(count, comm.rank() + 1);
        gcl::all_reduce(comm, v, gcl::sum{}, alg);
        auto const& st = comm.transport().stats();
        auto const& t = comm.transport().inner();
        return rank_view{v == std::vector<std::int64_t>(v.size(), p * (p + 1) / 2),
                         {st.messages_sent, st.rounds},
                         t.ranks_share_cores(),
                         t.ranks_crowd_cores()};
      },
      o);
}

// by_size's all_reduce of `count` int64 on P ranks, checked to be exact on every rank and to
// send there what `want` sends, where `other` sends otherwise (so that the check tells the two
// apart). Returns what each rank saw, for the caller's checks of the hints.
template <class Want, class Other>
std::vector<rank_view> by_size_sends_as(int p, std::size_t count, Want want, Other other) {
  auto const chosen = counted_all_reduce(p, count, gcl::by_size{});
  auto const wanted = counted_all_reduce(p, count, want);
  auto const others = counted_all_reduce(p, count, other);
  bool differ = false;
  for (int r = 0; r < p; ++r) {
    auto const i = static_cast<std::size_t>(r);
    differ = differ || wanted[i].messages != others[i].messages;
    BOOST_TEST_INFO("P=" << p << ", " << count * 8 << " bytes, rank " << r);
    BOOST_TEST(chosen[i].exact);
    BOOST_TEST((chosen[i].messages == wanted[i].messages));
  }
  BOOST_TEST(differ, "P=" << p << ", " << count * 8 << " bytes");
  return chosen;
}

}  // namespace

// by_size's choices for ranks that share cores (tree_below_if_cores_shared) apply over shm
// exactly when the job's ranks outnumber the host's CPUs: counted against the tree's messages.
BOOST_AUTO_TEST_CASE(by_size_sees_whether_ranks_share_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  gcl::by_size const tree_when_shared{
      .sizes = gcl::all_reduce_thresholds{.tree_below_if_cores_shared = 1 << 20}};
  auto sent = [](int p, auto alg) { return counted_all_reduce(p, 100, alg); };
  std::vector<int> sizes{2};
  if (cpus != 0 && cpus + 1 <= 8) sizes.push_back(static_cast<int>(cpus) + 1);
  for (int p : sizes) {
    bool const shared = cpus != 0 && static_cast<unsigned>(p) > cpus;
    auto const chosen = sent(p, tree_when_shared);
    auto const tree = sent(p, gcl::tree{});
    auto const rd = sent(p, gcl::recursive_doubling{});
    bool differ = false;  // the check below tells the two algorithms apart
    for (int r = 0; r < p; ++r) {
      auto const i = static_cast<std::size_t>(r);
      differ = differ || tree[i].messages != rd[i].messages;
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, rank " << r);
      BOOST_TEST(chosen[i].exact);
      BOOST_TEST(chosen[i].share_cores == shared);
      BOOST_TEST((chosen[i].messages == (shared ? tree[i] : rd[i]).messages));
    }
    // At P = 2 the two may send alike (on a one-CPU host P = 2 is the shared case).
    if (p > 2) BOOST_TEST(differ, "P=" << p);
  }
}

// Where the ranks outnumber the CPUs (and they are at most by_size::direct_max_ranks), shm's
// default all_reduce takes direct below 4 KiB, as between threads; at P = 2 (where the ranks
// have a CPU each) recursive doubling. Counted against each one named outright.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_takes_direct_where_ranks_share_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  auto sent = [](int p, auto alg) { return counted_all_reduce(p, 8, alg); };  // 64 B
  static_assert(64 < gcl::shm_transport::default_all_reduce.direct_below_if_cores_shared);
  if (cpus == 0) return;  // the host's CPUs unknown: no rank shares them
  int const n = static_cast<int>(cpus);
  std::vector<int> sizes{2};
  for (int p : {2 * n, n + 1})
    if (p >= 3 && p <= gcl::by_size::direct_max_ranks) sizes.push_back(p);
  for (int p : sizes) {
    bool const shares = p > n;
    auto const chosen = sent(p, gcl::by_size{});
    auto const direct = sent(p, gcl::direct{});
    auto const rd = sent(p, gcl::recursive_doubling{});
    bool differ = false;  // the check below tells the two algorithms apart
    for (int r = 0; r < p; ++r) {
      auto const i = static_cast<std::size_t>(r);
      differ = differ || direct[i].messages != rd[i].messages;
      BOOST_TEST_INFO("P=" << p << " on " << cpus << " CPUs, rank " << r);
      BOOST_TEST(chosen[i].exact);
      BOOST_TEST(chosen[i].share_cores == shares);
      BOOST_TEST((chosen[i].messages == (shares ? direct[i] : rd[i]).messages));
    }
    // At P = 2 the two send alike.
    if (p > 2) BOOST_TEST(differ, "P=" << p);
  }
}

// Where the ranks outnumber the CPUs, shm's default all_reduce takes ring from 64 KiB
// (ring_from_if_cores_shared), where it took the tree or halving-doubling below ring_from (512
// KiB) until 2026-12-06; where each rank has a CPU, halving-doubling still. At P = CPUs + 1
// (which shares the cores and, from two CPUs on, does not crowd them), 64 and 128 KiB, against
// ring and halving-doubling named outright.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_takes_ring_from_64_KiB_where_ranks_share_cores) {
  constexpr auto t = gcl::shm_transport::default_all_reduce;
  static_assert(t.ring_from_if_cores_shared == 64 * 1024 && t.ring_from > 128 * 1024);
  unsigned const cpus = std::thread::hardware_concurrency();
  if (cpus < 2 || cpus + 1 > 8) return;  // P = CPUs + 1 crowds them, or is too many to start
  std::vector<int> ranks{static_cast<int>(cpus) + 1};
  if (cpus >= 3) ranks.push_back(3);  // each rank has a CPU
  for (int p : ranks) {
    bool const shares = static_cast<unsigned>(p) > cpus;
    for (std::size_t count : {std::size_t{8 * 1024}, std::size_t{16 * 1024}}) {  // 64, 128 KiB
      BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs") {
        auto const chosen = shares
                                ? by_size_sends_as(p, count, gcl::ring{}, gcl::halving_doubling{})
                                : by_size_sends_as(p, count, gcl::halving_doubling{}, gcl::ring{});
        for (auto const& r : chosen) BOOST_TEST(r.share_cores == shares);
      }
    }
  }
}

// Where every CPU runs two ranks or more, the parameter server from there below 64 KiB, and
// from the smallest size beyond by_size::direct_max_ranks ranks: 8 KiB at P = 2 x CPUs, 64 B
// at max(2 x CPUs, direct_max_ranks + 1). Counted against it and recursive doubling named
// outright.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_takes_the_parameter_server_where_ranks_crowd_cores) {
  unsigned const cpus = std::thread::hardware_concurrency();
  constexpr auto t = gcl::shm_transport::default_all_reduce;
  static_assert(t.direct_below_if_cores_shared <= 8192);
  static_assert(t.parameter_server_below_if_cores_crowded > 8192);
  if (cpus == 0) return;  // the host's CPUs unknown: no rank crowds them
  int const twice = 2 * static_cast<int>(cpus);
  int const beyond_direct = std::max(twice, gcl::by_size::direct_max_ranks + 1);
  if (beyond_direct > gcl::by_size::parameter_server_max_ranks) return;
  for (auto [p, count] :
       {std::pair{twice, std::size_t{1024}}, std::pair{beyond_direct, std::size_t{8}}}) {
    BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs") {
      auto const chosen =
          by_size_sends_as(p, count, gcl::parameter_server{}, gcl::recursive_doubling{});
      for (auto const& r : chosen) BOOST_TEST(r.crowd_cores);
    }
  }
}

// Where some core runs three ranks or more (the ranks more than twice the CPUs: on 2 CPUs,
// 5), direct only below 512 B (direct_below_if_over_two_per_cpu), the parameter server from
// there: 64 B and 1 KiB at P = 2 x CPUs + 1, where that is at most by_size::direct_max_ranks.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_takes_direct_only_below_512_B_where_a_core_runs_three) {
  constexpr auto t = gcl::shm_transport::default_all_reduce;
  static_assert(t.direct_below_if_over_two_per_cpu == 512 && t.direct_below_if_cores_shared > 1024);
  unsigned const cpus = std::thread::hardware_concurrency();
  int const p = 2 * static_cast<int>(cpus) + 1;
  if (cpus == 0 || p > gcl::by_size::direct_max_ranks) return;  // no such P takes direct here
  auto const said = gcl::spawn<gcl::shm_transport>(
      p, [](auto& comm) { return comm.transport().ranks_over_two_per_cpu(); });
  BOOST_TEST(said == std::vector<bool>(static_cast<std::size_t>(p), true),
             boost::test_tools::per_element());
  by_size_sends_as(p, 8, gcl::direct{}, gcl::parameter_server{});    // 64 B
  by_size_sends_as(p, 128, gcl::parameter_server{}, gcl::direct{});  // 1 KiB
}

// The default all_reduce runs ring in blocks of 1 MiB per rank over shm (a chunk then fits its
// ring whole) and reduces messages from 64 KiB as they arrive, or from 4 MiB where they come
// by cross-memory attach (shm_transport::default_all_reduce, shm_options). Counted: 3 MiB is
// three blocks of 2 (P - 1) messages per rank (two blocks with 2 MiB ones), at P = 2, 3 and 6
// (at least twice the CPUs of the machines the suite runs on, where 2 MiB blocks and
// cross-memory attach were the default until 2026-11-27; not a power of two, which would take
// halving-doubling there: the next test).
BOOST_AUTO_TEST_CASE(ring_blocks_fit_the_rings) {
  static_assert(gcl::shm_transport::default_all_reduce.ring_block_bytes == std::size_t{1} << 20);
  for (int p : {2, 3, 4, 5, 8, 16}) {
    BOOST_TEST_INFO("P=" << p);
    gcl::shm_options o;
    o.size = p;
    BOOST_TEST(o.combine_threshold() == std::size_t{64} << 10);
    o.cross_memory_attach = true;
    BOOST_TEST(o.combine_threshold() == std::size_t{4} << 20);
  }
  gcl::shm_options o;
  o.timeout = 60s;
  for (int p : {2, 3, 6}) {
    auto out = gcl::spawn<gcl::counting<gcl::shm_transport>>(
        p,
        [&](auto& comm) {
          std::vector<float> v((std::size_t{3} << 20) / sizeof(float),
                               static_cast<float>(comm.rank() + 1));
          gcl::all_reduce(comm, v, gcl::sum{});
          return std::pair(v == std::vector<float>(v.size(), static_cast<float>(p * (p + 1) / 2)),
                           comm.transport().stats().messages_sent);
        },
        o);
    for (auto const& [ok, sent] : out) {
      BOOST_TEST_INFO("P=" << p);
      BOOST_TEST(ok);
      BOOST_TEST(sent == 3u * 2u * static_cast<unsigned>(p - 1));
    }
  }
}

// Where a power of two of ranks crowd the cores (at least two per CPU), the default all_reduce
// runs halving-doubling from 64 KiB below 4 MiB (`halving_doubling_{from,below}_if_cores_crowded`:
// ring there took 2.8-3.9x its time at P = 4 on an AMD host, 2026-12-08, shm.hpp), and ring in
// blocks from 4 MiB (halving-doubling, which took the sizes from 2 MiB there until 2026-12-05,
// measured 1.2-2.6x ring's time from 4 MiB over loops of calls). Where each rank has a CPU, ring
// in blocks from ring_from, halving-doubling below. Counted against each one named outright, at
// 64 KiB, 1, 2 and 4 MiB.
BOOST_AUTO_TEST_CASE(the_default_all_reduce_takes_halving_doubling_below_4_MiB_where_ranks_crowd) {
  constexpr auto t = gcl::shm_transport::default_all_reduce;
  constexpr std::size_t kib = 1024, mib = kib * kib;
  static_assert(t.halving_doubling_from_if_cores_crowded == 64 * kib &&
                t.halving_doubling_below_if_cores_crowded == 4 * mib);
  static_assert(t.ring_from_if_cores_shared <= 64 * kib && t.ring_from > 64 * kib &&
                t.ring_from <= mib);
  unsigned const cpus = std::thread::hardware_concurrency();
  if (cpus == 0) return;  // the host's CPUs unknown: no rank crowds them
  int crowding = 4;       // at P = 2 ring's messages and halving-doubling's are the same
  while (crowding < 2 * static_cast<int>(cpus)) crowding *= 2;
  std::vector<int> sizes{crowding};
  if (cpus >= 4) sizes.push_back(4);  // a CPU each
  for (int p : sizes) {
    if (p > 16) continue;  // more processes' worth of threads than this test should start
    bool const crowds = p >= 2 * static_cast<int>(cpus);
    for (std::size_t bytes : {64 * kib, mib, 2 * mib, 4 * mib}) {
      std::size_t const count = bytes / sizeof(std::int64_t);
      bool const expect_hd =
          bytes < (crowds ? t.halving_doubling_below_if_cores_crowded : t.ring_from);
      auto const chosen = counted_all_reduce(p, count, gcl::by_size{});
      auto const hd = counted_all_reduce(p, count, gcl::halving_doubling{});
      auto const ring = counted_all_reduce(p, count, gcl::by_size::ring_of(t, p, crowds));
      for (int r = 0; r < p; ++r) {
        auto const i = static_cast<std::size_t>(r);
        BOOST_TEST_CONTEXT("P=" << p << " on " << cpus << " CPUs, " << bytes << " bytes, rank "
                                << r) {
          BOOST_TEST(chosen[i].exact);
          BOOST_TEST(chosen[i].crowd_cores == crowds);
          BOOST_TEST((hd[i].messages != ring[i].messages));  // the counts tell them apart
          BOOST_TEST((chosen[i].messages == (expect_hd ? hd : ring)[i].messages));
        }
      }
    }
  }
}

// Two jobs at once, each with its own token: each sums its own ranks only.
BOOST_AUTO_TEST_CASE(two_jobs_at_once_do_not_meet) {
  std::vector<std::int64_t> sums(2);
  std::vector<std::jthread> jobs;
  for (int j = 0; j < 2; ++j)
    jobs.emplace_back([&, j] {
      auto r = gcl::spawn<gcl::shm_transport>(
          3,
          [j](auto& comm) {
            std::int64_t x = 100 * (j + 1) + comm.rank();
            for (int i = 0; i < 50; ++i) {
              std::int64_t y = x;
              gcl::all_reduce(comm, std::span(&y, 1), gcl::sum{}, gcl::ring{});
              if (i == 49) return y;
            }
            return std::int64_t{0};
          },
          with(60s));
      sums[j] = r[0];
    });
  jobs.clear();
  BOOST_TEST(sums[0] == 300 + 3);
  BOOST_TEST(sums[1] == 600 + 3);
}

namespace {
std::mutex log_mutex;
std::vector<std::string> logged;
void record(gcl::log_level, std::string_view m) {
  std::lock_guard lock(log_mutex);
  logged.emplace_back(m);
}
}  // namespace

// A job with the token of a running job is refused at once; a process that knows the job's
// socket but not its token is refused (and logged), and the job goes on.
BOOST_AUTO_TEST_CASE(the_token_keeps_jobs_and_strangers_out) {
  auto previous = gcl::set_log_handler(&record);
  gcl::shm_options o = with(60s);
  o.size = 2;
  o.token = "gcl-test-token-" + std::to_string(::getpid());
  std::int64_t sum = 0;
  std::jthread rank0([&] {
    auto opts = o;
    opts.rank = 0;
    gcl::communicator comm(gcl::shm_transport{opts});
    std::int64_t x = 5;
    gcl::all_reduce(comm, std::span(&x, 1), gcl::sum{}, gcl::tree{});
    sum = x;
  });
  // Rank 0 is listening once a connection succeeds.
  socklen_t len = 0;
  auto addr = gcl::detail::shm_rendezvous::address(o, len);
  int fd = -1;
  for (int i = 0; i < 10000; ++i) {
    fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) break;
    ::close(fd);
    fd = -1;
    std::this_thread::sleep_for(1ms);
  }
  BOOST_TEST_REQUIRE(fd >= 0);
  // The same token again: another job's rank 0 cannot take the name.
  auto other = o;
  other.rank = 0;
  auto what = error_of([&] { gcl::shm_transport t{other}; });
  BOOST_TEST(what.find("same job token") != std::string::npos, what);
  // A stranger: the right name, the wrong token.
  gcl::detail::shm_hello h;
  h.rank = 1;
  h.size = 2;
  h.token_check = gcl::detail::shm_token_hash("gcl-shm-check:", "a guess");
  BOOST_TEST(::send(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h));
  gcl::detail::shm_welcome w;
  BOOST_TEST(::recv(fd, &w, sizeof w, 0) == static_cast<ssize_t>(sizeof w));
  BOOST_TEST(w.accepted == 0u);
  BOOST_TEST(std::string(w.why).find("token") != std::string::npos, w.why);
  ::close(fd);
  {
    auto opts = o;
    opts.rank = 1;
    gcl::communicator comm(gcl::shm_transport{opts});
    std::int64_t x = 7;
    gcl::all_reduce(comm, std::span(&x, 1), gcl::sum{}, gcl::tree{});
    BOOST_TEST(x == 12);
  }
  rank0.join();
  BOOST_TEST(sum == 12);
  gcl::set_log_handler(previous);
  std::lock_guard lock(log_mutex);
  bool refused = false;
  for (auto const& m : logged)
    refused = refused || m.find("refused a process") != std::string::npos;
  BOOST_TEST(refused);
}
