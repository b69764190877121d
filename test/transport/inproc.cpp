#define BOOST_TEST_MODULE transport_inproc
#include <boost/test/unit_test.hpp>

#include "../support/rank_checks.hpp"

#include <gcl/communicator.hpp>
#include <gcl/detail/host_cpus.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

using gcl::inproc_transport;
using namespace std::chrono_literals;

namespace {

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

std::vector<std::uint32_t> pattern(std::size_t n, std::uint32_t seed) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<std::uint32_t>(seed * 2654435761u + i * 40503u);
  return v;
}

std::span<std::byte const> bytes(auto const& v) {
  return std::as_bytes(std::span(v));
}
std::span<std::byte> wbytes(auto&& v) {
  return std::as_writable_bytes(std::span(v));
}

}  // namespace

static_assert(gcl::transport<inproc_transport>);
static_assert(gcl::call_aware_transport<inproc_transport>);
static_assert(gcl::sendrecv_transport<inproc_transport>);
static_assert(gcl::irecv_transport<inproc_transport>);
static_assert(gcl::group_transport<inproc_transport>);

BOOST_AUTO_TEST_CASE(fifo_per_source_and_tag_with_interleaved_tags_and_sizes) {
  // Messages of two tags and varied sizes (some queued before the recv, some received into a
  // posted recv) must arrive in send order per tag, whatever the interleaving.
  gcl::spawn<inproc_transport>(3, [](auto& comm) {
    auto& t = comm.transport();
    int const me = t.rank();
    if (me != 0) {
      for (std::uint32_t i = 0; i < 200; ++i) {
        auto v = pattern(i % 17 + static_cast<std::size_t>(me), i);
        t.send(0, gcl::tag{i % 3}, bytes(v));
        if (i % 50 == 0) std::this_thread::yield();
      }
    } else {
      for (std::uint32_t tg : {2u, 0u, 1u})
        for (int src : {2, 1})
          for (std::uint32_t i = tg; i < 200; i += 3) {
            std::vector<std::uint32_t> v(i % 17 + static_cast<std::size_t>(src));
            t.recv(src, gcl::tag{tg}, wbytes(v));
            RANK_TEST_REQUIRE((v == pattern(v.size(), i)));
          }
    }
  });
}

BOOST_AUTO_TEST_CASE(send_to_self) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    auto& t = comm.transport();
    auto a = pattern(1000, 1), b = pattern(3, 2);
    t.send(t.rank(), gcl::tag{4}, bytes(a));  // eager: returns before the recv below
    t.send(t.rank(), gcl::tag{4}, bytes(b));
    std::vector<std::uint32_t> ra(1000), rb(3);
    t.recv(t.rank(), gcl::tag{4}, wbytes(ra));
    t.recv(t.rank(), gcl::tag{4}, wbytes(rb));
    RANK_TEST((ra == a));
    RANK_TEST((rb == b));
    std::uint64_t x = 0;
    comm.sendrecv(comm.rank(), std::uint64_t{77}, comm.rank(), x);
    RANK_TEST(x == 77u);
  });
}

BOOST_AUTO_TEST_CASE(empty_messages) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    std::vector<int> none;
    if (comm.rank() == 0) {
      comm.send(1, none);
      comm.send(1, 5);
    } else {
      comm.recv(0, none);
      {
        auto const got = comm.template recv<int>(0);
        RANK_TEST(got == 5);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(eager_all_send_then_all_recv_64_MiB) {
  // Every rank sends 64 MiB to every other rank before receiving anything: eager sends cannot
  // deadlock, however large the message.
  constexpr std::size_t n = (64u << 20) / sizeof(std::uint32_t);
  for (int p : {2, 3}) {
    gcl::spawn<inproc_transport>(p, [p](auto& comm) {
      auto mine = pattern(n, static_cast<std::uint32_t>(comm.rank()));
      for (int d = 1; d < p; ++d) comm.send((comm.rank() + d) % p, mine);
      std::vector<std::uint32_t> in(n);
      for (int d = 1; d < p; ++d) {
        int src = (comm.rank() + p - d) % p;
        comm.recv(src, in);
        RANK_TEST_REQUIRE((in == pattern(n, static_cast<std::uint32_t>(src))));
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(timeout_names_the_peer_and_the_size) {
  BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(3,
                                                     [](auto& comm) {
                                                       if (comm.rank() != 1) return;
                                                       std::vector<double> v(5);
                                                       comm.recv(2, v, gcl::tag{9});
                                                     },
                                                     {.timeout = 200ms}),
                        gcl::transport_error, [](auto const& e) {
                          std::string w = e.what();
                          BOOST_TEST_MESSAGE(w);
                          return e.code() == gcl::errc::timeout && contains(w, "rank 1") &&
                                 contains(w, "recv from rank 2") && contains(w, "40 bytes") &&
                                 contains(w, "tag 9") && contains(w, "200 ms");
                        });
}

BOOST_AUTO_TEST_CASE(irecv_then_test_until_done) {
  for (bool message_first : {false, true}) {
    gcl::spawn<inproc_transport>(2, [message_first](auto& comm) {
      if (comm.rank() == 0) {
        if (!message_first) {
          auto const got = comm.template recv<int>(1, gcl::tag{2});
          RANK_TEST(got == 1);
        }  // wait: irecv posted
        comm.send(1, pattern(100, 5), gcl::tag{1});
        if (message_first) comm.send(1, 1, gcl::tag{2});
      } else {
        std::vector<std::uint32_t> v(100);
        if (message_first) {
          auto const got = comm.template recv<int>(0, gcl::tag{2});
          RANK_TEST(got == 1);
        }  // the data is queued
        auto r = comm.irecv(0, v, gcl::tag{1});
        if (!message_first) {
          RANK_TEST(!r.test());  // nobody has sent yet
          comm.send(0, 1, gcl::tag{2});
        }
        // A hang guard, not a speed bound: the message is in memory already or microseconds
        // away, so only a request that never completes can reach it, however loaded the machine.
        auto deadline = std::chrono::steady_clock::now() + 120s;
        while (!r.test()) {
          RANK_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "irecv never completed");
          std::this_thread::yield();
        }
        RANK_TEST((v == pattern(100, 5)));
        r.wait();  // a completed request may be waited on again
      }
    });
  }
}

BOOST_AUTO_TEST_CASE(irecv_requests_complete_in_any_wait_order) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 0) {
      for (std::uint32_t i = 0; i < 8; ++i) comm.send(1, pattern(10, i));
    } else {
      std::vector<std::vector<std::uint32_t>> bufs(8, std::vector<std::uint32_t>(10));
      std::vector<typename std::remove_reference_t<decltype(comm)>::request> reqs;
      for (auto& b : bufs) reqs.push_back(comm.irecv(0, b));
      for (int i = 7; i >= 0; --i) reqs[i].wait();
      for (std::uint32_t i = 0; i < 8; ++i) RANK_TEST((bufs[i] == pattern(10, i)));
    }
  });
}

BOOST_AUTO_TEST_CASE(a_dropped_irecv_is_withdrawn) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    if (comm.rank() == 1) {
      {
        int lost = 0;
        auto r = comm.irecv(0, lost);
      }  // destroyed unfinished: the next message must not land in `lost`
      comm.send(0, 0);
      {
        auto const got = comm.template recv<int>(0);
        RANK_TEST(got == 123);
      }
    } else {
      comm.template recv<int>(1);
      comm.send(1, 123);
    }
  });
}

BOOST_AUTO_TEST_CASE(abort_releases_blocked_calls_and_fails_later_ones) {
  inproc_transport::group g(3, {.timeout = 60s});
  std::atomic<int> aborted{0};
  std::vector<std::jthread> threads;
  for (int r = 1; r < 3; ++r)
    threads.emplace_back([&, r] {
      auto t = g.connect(r);
      std::vector<int> v(4);
      try {
        t.recv(0, gcl::tag{0}, wbytes(v));
      } catch (gcl::transport_error const& e) {
        if (e.code() == gcl::errc::aborted && contains(e.what(), "operator pressed stop"))
          ++aborted;
      }
    });
  std::this_thread::sleep_for(50ms);
  g.abort("operator pressed stop");
  g.abort("a later reason is ignored");
  threads.clear();  // joins
  BOOST_TEST(aborted.load() == 2);
  auto t0 = g.connect(0);
  int x = 1;
  BOOST_CHECK_EXCEPTION(t0.send(1, gcl::tag{0}, std::as_bytes(std::span(&x, 1))),
                        gcl::transport_error, [](auto const& e) {
                          return e.code() == gcl::errc::aborted &&
                                 contains(e.what(), "operator pressed stop") &&
                                 !contains(e.what(), "later");
                        });
}

BOOST_AUTO_TEST_CASE(connect_out_of_range_is_a_usage_error) {
  inproc_transport::group g(2);
  BOOST_CHECK_THROW(g.connect(2), gcl::usage_error);
  BOOST_CHECK_THROW(g.connect(-1), gcl::usage_error);
  BOOST_CHECK_THROW(inproc_transport::group(0), gcl::usage_error);
}

// A message whose call_info differs from the receiver's fails with errc::mismatch, and the
// error names both sides, whether the message arrived first (queued) or the receive was posted
// first (the sender finds it).
BOOST_AUTO_TEST_CASE(mismatch_names_both_sides) {
  auto mine = gcl::make_call_info<float>(gcl::call_kind::all_reduce, 10, -1, "sum", "ring");
  mine.sequence = 3;
  auto theirs = gcl::make_call_info<float>(gcl::call_kind::broadcast, 10, 1, "", "tree");
  theirs.sequence = 3;
  for (bool message_first : {true, false}) {
    std::string what;
    try {
      gcl::spawn<inproc_transport>(2, [&](auto& comm) {
        auto& t = comm.transport();
        std::vector<float> v(10);
        int go = 0;
        if (t.rank() == 0) {
          if (!message_first) t.recv(1, gcl::tag{7}, wbytes(std::span(&go, 1)));
          t.set_call(theirs);
          t.send(1, gcl::detail::collective_tag, bytes(v));
          t.set_call({});
          if (message_first) t.send(1, gcl::tag{7}, bytes(std::span(&go, 1)));
        } else {
          if (message_first) t.recv(0, gcl::tag{7}, wbytes(std::span(&go, 1)));
          t.set_call(mine);
          if (message_first) {
            t.recv(0, gcl::detail::collective_tag, wbytes(v));
          } else {
            auto r = t.irecv(0, gcl::detail::collective_tag, wbytes(v));  // posted before the send
            t.set_call({});
            t.send(0, gcl::tag{7}, bytes(std::span(&go, 1)));
            r.wait();
          }
        }
      });
    } catch (gcl::transport_error const& e) {
      BOOST_TEST(e.code() == gcl::errc::mismatch);
      what = e.what();
    }
    BOOST_TEST_MESSAGE(what);
    // Found before any byte is compared: rank 1 is in (or done with) another call #3.
    BOOST_TEST(contains(what, "rank 1 called all_reduce #3 (ring, sum, 10 x float32)"));
    BOOST_TEST(contains(what, "rank 0 called broadcast #3 (tree, 10 x float32, root 1)"));
  }
}

// A peer's message of another collective under the same number is already here when this rank
// begins its own, which only sends (the root of a broadcast at P = 2): the call itself fails
// with the mismatch, at its first send, rather than returning as if all were well.
BOOST_AUTO_TEST_CASE(a_call_that_only_sends_fails_on_a_mismatched_message_already_here) {
  auto theirs = gcl::make_call_info<float>(gcl::call_kind::reduce, 1, 0, "sum", "tree");
  theirs.sequence = 1;
  auto mine = gcl::make_call_info<float>(gcl::call_kind::broadcast, 1, 0, "", "tree");
  mine.sequence = 1;
  std::atomic<bool> thrown_by_the_call{false};
  std::string what;
  try {
    gcl::spawn<inproc_transport>(2, [&](auto& comm) {
      auto& t = comm.transport();
      float x = 1;
      int go = 0;
      if (t.rank() == 1) {
        t.set_call(theirs);
        t.send(0, gcl::detail::collective_tag, bytes(std::span(&x, 1)));
        t.set_call({});
        t.send(0, gcl::tag{7}, bytes(std::span(&go, 1)));   // after it: FIFO
        t.recv(0, gcl::tag{9}, wbytes(std::span(&go, 1)));  // ended by the mismatch's abort
        return;
      }
      t.recv(1, gcl::tag{7}, wbytes(std::span(&go, 1)));  // the reduce's message is here
      try {
        t.set_call(mine);
        t.send(1, gcl::detail::collective_tag, bytes(std::span(&x, 1)));
      } catch (gcl::transport_error const&) {
        thrown_by_the_call = true;
        throw;
      }
      t.set_call({});
    });
  } catch (gcl::transport_error const& e) {
    BOOST_TEST(e.code() == gcl::errc::mismatch);
    what = e.what();
  }
  BOOST_TEST_MESSAGE(what);
  BOOST_TEST(thrown_by_the_call.load());
  BOOST_TEST(contains(what, "rank 0 called broadcast #1"));
  BOOST_TEST(contains(what, "rank 1 called reduce #1"));
}

BOOST_AUTO_TEST_CASE(size_mismatch_names_both_sizes_either_way) {
  for (bool message_first : {true, false}) {
    BOOST_CHECK_EXCEPTION(gcl::spawn<inproc_transport>(2,
                                                       [&](auto& comm) {
                                                         if (comm.rank() == 0) {
                                                           if (!message_first)
                                                             std::this_thread::sleep_for(50ms);
                                                           comm.send(1,
                                                                     std::vector<std::int16_t>(7));
                                                         } else {
                                                           if (message_first)
                                                             std::this_thread::sleep_for(50ms);
                                                           std::vector<std::int16_t> v(9);
                                                           comm.recv(0, v);
                                                         }
                                                       }),
                          gcl::transport_error, [](auto const& e) {
                            std::string w = e.what();
                            return e.code() == gcl::errc::mismatch &&
                                   contains(w, "expected 18 bytes") && contains(w, "sent 14 bytes");
                          });
  }
}

// A large message is offered: the receiver copies it from the sender's buffer. A send returns
// only when the buffer is free again: the receiver has copied it, or (a late receiver) the
// sender has copied it into the channel. Overwriting the buffer right after send must not
// change what the receiver gets, whichever happened.
BOOST_AUTO_TEST_CASE(a_large_send_leaves_the_buffer_free_whether_the_receiver_is_early_or_late) {
  constexpr std::size_t n = (1u << 20) / sizeof(std::uint32_t);
  for (auto receiver_delay : {0ms, 30ms}) {
    gcl::spawn<inproc_transport>(2, [&](auto& comm) {
      if (comm.rank() == 0) {
        for (std::uint32_t k = 0; k < 4; ++k) {
          auto v = pattern(n, k);
          comm.send(1, v);
          std::fill(v.begin(), v.end(), 0xdeadbeef);  // the send has returned: ours again
        }
      } else {
        std::this_thread::sleep_for(receiver_delay);
        std::vector<std::uint32_t> in(n);
        for (std::uint32_t k = 0; k < 4; ++k) {
          comm.recv(0, in);
          RANK_TEST_REQUIRE((in == pattern(n, k)), "message " << k);
        }
      }
    });
  }
}

// Large and small messages on two tags, received tag by tag in the opposite order of their
// sending: a receive takes a message from the middle of the channel (a large one too, offered
// or withdrawn), and each tag's messages still arrive in send order.
BOOST_AUTO_TEST_CASE(large_and_small_messages_out_of_tag_order_keep_fifo_per_tag) {
  gcl::spawn<inproc_transport>(2, [](auto& comm) {
    std::size_t const sizes[] = {5, 70000, 3, 200000};
    if (comm.rank() == 0) {
      for (std::uint32_t k = 0; k < 4; ++k) {
        comm.send(1, pattern(sizes[k], k), gcl::tag{1});
        comm.send(1, pattern(sizes[3 - k], 10 + k), gcl::tag{2});
      }
    } else {
      for (std::uint32_t k = 0; k < 4; ++k) {
        std::vector<std::uint32_t> in(sizes[3 - k]);
        comm.recv(0, in, gcl::tag{2});
        RANK_TEST((in == pattern(sizes[3 - k], 10 + k)), "tag 2, message " << k);
      }
      for (std::uint32_t k = 0; k < 4; ++k) {
        std::vector<std::uint32_t> in(sizes[k]);
        comm.recv(0, in, gcl::tag{1});
        RANK_TEST((in == pattern(sizes[k], k)), "tag 1, message " << k);
      }
    }
  });
}

// With no polling, every wait sleeps and every message must wake its receiver: a lost wake-up
// (the sleeper and the sender missing each other's store) would leave a receive asleep until
// the timeout, which fails the test. Many rounds, to give a race a chance to show.
BOOST_AUTO_TEST_CASE(sleeping_receivers_are_always_woken) {
  for (int p : {2, 3}) {
    gcl::spawn<inproc_transport>(p,
                                 [p](auto& comm) {
                                   int const right = (comm.rank() + 1) % p,
                                             left = (comm.rank() + p - 1) % p;
                                   std::uint32_t token = 0;
                                   for (std::uint32_t k = 0; k < 3000; ++k) {
                                     if (comm.rank() == 0) {
                                       comm.send(right, k);
                                       token = comm.template recv<std::uint32_t>(left);
                                     } else {
                                       token = comm.template recv<std::uint32_t>(left);
                                       comm.send(right, token);
                                     }
                                     RANK_TEST_REQUIRE(token == k);
                                   }
                                 },
                                 {.timeout = 20s, .spin = 0us});
  }
}

// The channel's staging ring, by itself (one thread plays both sides): messages are staged in
// turn, a message that does not fit before the ring's end starts at its beginning, a full ring
// refuses (the sender then lends the cell a buffer), and what the receiver has passed is free
// again, but not what it has merely consumed out of order.
BOOST_AUTO_TEST_CASE(the_staging_ring_hands_out_room_in_turn_and_takes_it_back_when_passed) {
  using cell = gcl::detail::inproc_cell;
  constexpr std::size_t ring = 64 * 1024, quarter = ring / 4;
  gcl::detail::inproc_channel ch(4, cell::bytes_in_cell, ring);
  BOOST_TEST(ch.stage(quarter + 1) == nullptr);  // larger than a quarter of the ring
  BOOST_TEST(ch.stage(0) == nullptr);

  auto send = [&](std::size_t bytes) {
    auto& c = ch.next(bytes);
    std::byte* at = ch.stage(bytes);
    c.size = bytes;
    c.bytes = at != nullptr ? at : c.data();
    ch.publish(cell::ready);
    return at;
  };
  std::byte* const first = send(quarter);
  BOOST_REQUIRE(first != nullptr);
  BOOST_TEST(send(quarter) == first + quarter);  // in turn
  BOOST_TEST(send(quarter) == first + 2 * quarter);
  BOOST_TEST(send(quarter - 100) == first + 3 * quarter);
  BOOST_TEST(send(200) == nullptr);  // 100 bytes left at the end, and the start still taken

  // The receiver consumes the second message out of order: it is not passed, so its bytes
  // stay taken; the first is passed, so a message that fits there goes to the ring's start.
  cell* one = ch.first();
  cell* two = gcl::detail::inproc_channel::after(one);
  ch.consume(*two);
  BOOST_TEST(send(quarter) == nullptr);  // nothing passed yet
  ch.consume(*one);                      // passes both
  BOOST_TEST(send(quarter) == first);
  BOOST_TEST(send(quarter) == first + quarter);
  BOOST_TEST(send(quarter) == nullptr);  // the third and fourth are not consumed
}

// The receiver passes every cell it consumed out of order once it consumes the ones before
// them, and only those: the front stops at the first message it has not consumed, whatever
// the order (inproc_channel::consume reads the cells after the first only while some were
// consumed out of order).
BOOST_AUTO_TEST_CASE(the_front_passes_the_cells_consumed_out_of_order_once_it_reaches_them) {
  using cell = gcl::detail::inproc_cell;
  gcl::detail::inproc_channel ch(4, cell::bytes_in_cell, 64 * 1024);
  auto send = [&](int k) {
    auto& c = ch.next(1);
    c.size = 1;
    c.inline_bytes()[0] = static_cast<std::byte>(k);
    c.bytes = c.inline_bytes();
    ch.publish(cell::ready);
  };
  auto mark = [](cell const* c) { return c == nullptr ? -1 : static_cast<int>(c->bytes[0]); };
  auto nth = [&](int n) {
    cell* c = ch.first();
    for (int i = 0; i < n; ++i) c = gcl::detail::inproc_channel::after(c);
    return c;
  };
  for (int round = 0; round < 3; ++round) {  // the cells of three batches, then reused
    int const b = round * 10;
    for (int k = 1; k <= 6; ++k) send(b + k);
    ch.consume(*nth(1));  // message 2
    ch.consume(*nth(3));  // message 4
    BOOST_TEST(mark(ch.first()) == b + 1);
    ch.consume(*ch.first());  // 1, and 2 behind it
    BOOST_TEST(mark(ch.first()) == b + 3);
    ch.consume(*nth(2));      // 5, with 4 consumed between
    ch.consume(*ch.first());  // 3, 4 and 5
    BOOST_TEST(mark(ch.first()) == b + 6);
    send(b + 7);
    ch.consume(*ch.first());  // 6, in order
    BOOST_TEST(mark(ch.first()) == b + 7);
    ch.consume(*ch.first());
    BOOST_TEST(mark(ch.first()) == -1);
  }
}

// A cell holds its channel's inline bytes from its first line on, past the end of the cell
// itself: every message up to that many bytes is in its cell, at the address the receiver
// polls, a larger one in a lent buffer; written whole, cell after cell (new cells and reused
// ones), none overwrites another.
BOOST_AUTO_TEST_CASE(a_cell_holds_its_channels_inline_bytes_after_its_first_line) {
  using cell = gcl::detail::inproc_cell;
  constexpr std::size_t room = 1000;
  gcl::detail::inproc_channel ch(4, room, 64 * 1024);
  auto size = [](int k) { return k % 3 == 0 ? room + 1 : room - static_cast<std::size_t>(k % 3); };
  for (int round = 0; round < 3; ++round) {  // 11 messages: cells of three batches, then reused
    constexpr int messages = 11;
    for (int k = 0; k < messages; ++k) {
      auto& c = ch.next(size(k));
      c.size = size(k);
      std::byte* at = c.data();
      BOOST_TEST((at == c.inline_bytes()) == (size(k) <= room));
      std::memset(at, round * messages + k + 1, c.size);
      c.bytes = at;
      ch.publish(cell::ready);
    }
    int k = 0;
    for (cell* c = ch.first(); c != nullptr; c = gcl::detail::inproc_channel::after(c), ++k) {
      BOOST_TEST_REQUIRE(k < messages);
      auto const mark = static_cast<std::byte>(round * messages + k + 1);
      BOOST_TEST(c->size == size(k));
      BOOST_TEST(std::all_of(c->bytes, c->bytes + c->size, [&](std::byte b) { return b == mark; }),
                 "round " << round << ", message " << k);
      // The first 16 inline bytes end the line the receiver polls.
      BOOST_TEST(reinterpret_cast<std::uintptr_t>(c->inline_bytes()) % 64 == 48);
      BOOST_TEST(c->inline_bytes() == reinterpret_cast<std::byte*>(&c->state) + 48);
    }
    BOOST_TEST(k == messages);
    while (cell* c = ch.first()) ch.consume(*c);
  }
  gcl::detail::inproc_channel least(4, 0, 64 * 1024);  // never less than the cell's own room
  BOOST_TEST(least.next(cell::bytes_in_cell).inline_capacity == cell::bytes_in_cell);
}

// A world's channels demote the line their receiver polls (inproc_channel::publish) where each
// rank has a CPU of its own, and only there: a receiver that shares the sender's core finds the
// line in that core's caches.
BOOST_AUTO_TEST_CASE(channels_demote_the_polled_line_only_where_each_rank_has_a_cpu) {
  auto const cpus = static_cast<int>(gcl::detail::host_cpus());
  BOOST_TEST_REQUIRE(cpus > 0);
  for (int p : {1, 2, cpus, cpus + 1, 2 * cpus + 3}) {
    gcl::detail::inproc_world w(p, gcl::inproc_options{});
    bool const own_cpu = p <= cpus;
    for (int from = 0; from < p; ++from)
      for (int to = 0; to < p; ++to)
        BOOST_TEST(w.channel(from, to).demotes() == own_cpu,
                   "P = " << p << " on " << cpus << " CPUs, channel " << from << " -> " << to);
  }
  BOOST_TEST(!gcl::detail::inproc_channel(4, 0, 64 * 1024).demotes());  // unless asked
}

// Messages of every size around the cell's room (the 16 and 80 bytes of the cell itself, 272,
// and the room of the world's channels: 4 KiB and 16 at P = 2, less at P = 16), sent before
// any is received, received tag by tag out of send order, arrive whole and in order per tag.
BOOST_AUTO_TEST_CASE(messages_around_the_cells_room_arrive_whole) {
  std::vector<std::size_t> sizes;
  for (std::size_t edge : {16, 80, 272, 1024 + 16, 2048 + 16, 4096 + 16})
    for (std::size_t n = edge - 2; n <= edge + 2; ++n) sizes.push_back(n);
  auto message = [](std::size_t n, std::uint32_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed * 131 + i * 7 + 1);
    return v;
  };
  for (int p : {2, 16}) {
    gcl::spawn<inproc_transport>(
        p,
        [&](auto& comm) {
          auto& t = comm.transport();
          int const last = t.size() - 1;
          if (t.rank() == 0) {
            for (std::uint32_t k = 0; k < sizes.size(); ++k)
              t.send(last, gcl::tag{k % 2}, bytes(message(sizes[k], k)));
          } else if (t.rank() == last) {
            for (std::uint32_t tg : {1u, 0u})
              for (std::uint32_t k = tg; k < sizes.size(); k += 2) {
                std::vector<std::uint8_t> in(sizes[k]);
                t.recv(0, gcl::tag{tg}, wbytes(in));
                RANK_TEST_REQUIRE((in == message(sizes[k], k)),
                                  "P = " << p << ", " << sizes[k] << " bytes, message " << k);
              }
          }
        },
        {.timeout = 60s});
  }
}

// Eager messages through a small staging ring, many more than it holds, sent before any is
// received and received tag by tag out of send order, the sender's buffer overwritten after
// each send: every message arrives whole and in order per tag, whether it went through the
// ring (wrapping round it many times) or, when the ring was full, a lent buffer.
BOOST_AUTO_TEST_CASE(staged_messages_wrap_the_ring_and_overflow_into_lent_buffers) {
  gcl::inproc_options o;
  o.ring_bytes = 64 * 1024;
  o.eager_bytes = 16 * 1024;
  o.timeout = 60s;
  constexpr std::uint32_t messages = 64;
  auto size = [](std::uint32_t k) -> std::size_t { return 1024 + (k * 331) % 3072; };  // words
  for (auto receiver_delay : {0ms, 20ms}) {
    gcl::spawn<inproc_transport>(
        2,
        [&](auto& comm) {
          auto& t = comm.transport();
          if (t.rank() == 0) {
            std::vector<std::uint32_t> v;
            for (std::uint32_t k = 0; k < messages; ++k) {
              v = pattern(size(k), k);
              t.send(1, gcl::tag{k % 2}, bytes(v));
              std::fill(v.begin(), v.end(), 0xdeadbeef);  // eager: the buffer is ours again
            }
            for (std::uint32_t k = 0; k < messages; ++k) {  // and back, while rank 1 sends
              v = pattern(size(k), 1000 + k);
              std::vector<std::uint32_t> in(size(k));
              t.sendrecv(1, gcl::tag{2}, bytes(v), 1, gcl::tag{2}, wbytes(in));
              RANK_TEST_REQUIRE((in == pattern(size(k), 2000 + k)), "exchange " << k);
            }
          } else {
            std::this_thread::sleep_for(receiver_delay);
            for (std::uint32_t tg : {1u, 0u})
              for (std::uint32_t k = tg; k < messages; k += 2) {
                std::vector<std::uint32_t> in(size(k));
                t.recv(0, gcl::tag{tg}, wbytes(in));
                RANK_TEST_REQUIRE((in == pattern(size(k), k)), "tag " << tg << ", message " << k);
              }
            for (std::uint32_t k = 0; k < messages; ++k) {
              auto v = pattern(size(k), 2000 + k);
              std::vector<std::uint32_t> in(size(k));
              t.sendrecv(0, gcl::tag{2}, bytes(v), 0, gcl::tag{2}, wbytes(in));
              RANK_TEST_REQUIRE((in == pattern(size(k), 1000 + k)), "exchange " << k);
            }
          }
        },
        o);
  }
}

// A blocked call polls, a pause apart, for its first microseconds where each rank has a core (a
// yield there is only a system call, which costs microseconds in some virtual machines: more
// than the message it waits for), and yields from its first look where the ranks outnumber the
// CPUs (the sender may need this very core). The window is shorter than the spin after which a
// wait sleeps, so a wait still sleeps. Shm's waits take the same window (host_cpus.hpp).
BOOST_AUTO_TEST_CASE(waits_poll_without_yielding_only_where_each_rank_has_a_core) {
  if (gcl::detail::host_cpus() == 0) return;  // the host's CPUs unknown: nothing to tell
  for (int p : {1, 2, 3, 4, 8, 16, 64, 1024}) {
    auto const window = gcl::detail::polling_before_yielding(p);
    BOOST_TEST_CONTEXT("P=" << p << " on " << gcl::detail::host_cpus() << " CPUs") {
      BOOST_TEST((window.count() > 0) == !gcl::detail::ranks_outnumber_cpus(p));
      BOOST_TEST((window < gcl::detail::default_spin(p)));
    }
  }
  BOOST_TEST(gcl::detail::polling_before_yielding(1).count() > 0);  // one rank has a core
}
