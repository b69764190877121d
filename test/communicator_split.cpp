#define BOOST_TEST_MODULE communicator_split
// communicator::split and dup: MPI_Comm_split's membership and order, a 2 x 3 grid's row and
// column all_reduces against one over the whole job, messages of different communicators never
// meeting, mismatches inside a group named in both numberings, counting per communicator, and
// the context ids running out and coming back. Over inproc, counting<inproc>, shm (threads)
// and, built with GCL_TEST_TCP, TCP and hybrid (two pretend hosts); world sizes 1-8. Ranks report
// to the main thread, which asserts (Boost.Test's assertions are not thread-safe).
#include <boost/test/unit_test.hpp>

#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_gather.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/broadcast.hpp>
#include <gcl/communicator.hpp>
#include <gcl/error.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>
#include <gcl/transport/shm.hpp>
#if defined(GCL_TEST_TCP)
#include <gcl/transport/hybrid.hpp>
#include <gcl/transport/tcp.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "support/every_transport.hpp"

namespace {

constexpr int world_sizes[] = {1, 2, 3, 4, 5, 7, 8};

std::string text(std::vector<int> const& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// Runs f(comm) -> std::string on p ranks over every transport; returns the first complaint.
template <class F>
std::string everywhere(int p, F f) {
  return gcl_test::on_every_transport(p, f, std::chrono::seconds{30});
}

// The ranks of the communicator that rank `me` joins when every rank r passes color(r), key(r):
// those of its color, by key, then by rank (MPI_Comm_split). Empty for no_color.
template <class Color, class Key>
std::vector<int> expected_members(int p, int me, Color color, Key key) {
  std::vector<int> m;
  if (color(me) < 0) return m;
  for (int r = 0; r < p; ++r)
    if (color(r) == color(me)) m.push_back(r);
  std::stable_sort(m.begin(), m.end(), [&](int a, int b) { return key(a) < key(b); });
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_2x3_grid_rows_then_columns_equal_the_whole) {
  auto e = everywhere(6, [](auto& comm) -> std::string {
    int const r = comm.rank(), cols = 3;
    auto row = comm.split(r / cols, r % cols);
    auto col = comm.split(r % cols, r / cols);
    if (!row || !col) return "no row or column communicator";
    if (row->size() != 3 || row->rank() != r % cols || col->size() != 2 || col->rank() != r / cols)
      return "row " + std::to_string(row->rank()) + "/" + std::to_string(row->size()) +
             ", column " + std::to_string(col->rank()) + "/" + std::to_string(col->size());
    std::vector<int> data(1000), whole(1000);
    for (std::size_t i = 0; i < data.size(); ++i)
      data[i] = whole[i] = (r + 1) * static_cast<int>(i % 97 + 1);
    gcl::all_reduce(*row, data, gcl::sum{}, gcl::ring{});
    gcl::all_reduce(*col, data, gcl::sum{}, gcl::tree{});
    gcl::all_reduce(comm, whole, gcl::sum{}, gcl::ring{});
    for (std::size_t i = 0; i < data.size(); ++i)
      if (data[i] != whole[i] || data[i] != 21 * static_cast<int>(i % 97 + 1))
        return "element " + std::to_string(i) + ": rows then columns " + std::to_string(data[i]) +
               ", whole " + std::to_string(whole[i]);
    return "";
  });
  BOOST_TEST(e.empty(), e);
}

BOOST_AUTO_TEST_CASE(members_are_ordered_by_key_then_rank_and_no_color_joins_nothing) {
  for (int p : world_sizes) {
    // Three colors, the last rank in none (when there are others); keys that tie in pairs and
    // run against the ranks, so that both parts of the order are seen.
    auto color = [p](int r) { return p > 1 && r == p - 1 ? -1 : r % 3; };
    auto key = [](int r) { return -(r / 2); };
    auto e = everywhere(p, [&](auto& comm) -> std::string {
      int const me = comm.rank();
      auto sub = comm.split(color(me), key(me));
      auto const want = expected_members(p, me, color, key);
      // A collective on the world after all this: each sees only its own ranks.
      std::vector<int> w{me + 1};
      auto on_world = [&]() -> std::string {
        gcl::all_reduce(comm, w, gcl::sum{});
        return w[0] == p * (p + 1) / 2 ? "" : "world sum " + std::to_string(w[0]);
      };
      if (want.empty()) return sub ? "got a communicator for no_color" : on_world();
      if (!sub) return "got no communicator";
      auto const at = std::find(want.begin(), want.end(), me) - want.begin();
      if (sub->size() != static_cast<int>(want.size()) || sub->rank() != at)
        return "rank " + std::to_string(sub->rank()) + " of " + std::to_string(sub->size()) +
               ", want " + std::to_string(at) + " of " + text(want);
      // What the members say their old ranks are, in the new order: the membership as the
      // messages see it, not only as this rank computed it.
      std::vector<int> old(want.size());
      gcl::all_gather(*sub, std::vector<int>{me}, old, gcl::direct{});
      if (old != want) return "members " + text(old) + ", want " + text(want);
      for (int i = 0; i < sub->size(); ++i)
        if (sub->transport_rank(i) != want[static_cast<std::size_t>(i)])
          return "transport_rank(" + std::to_string(i) +
                 ") = " + std::to_string(sub->transport_rank(i));
      std::vector<int> v{me + 1};
      gcl::all_reduce(*sub, v, gcl::sum{}, gcl::recursive_doubling{});
      int sum = 0;
      for (int r : want) sum += r + 1;
      if (v[0] != sum) return "sum " + std::to_string(v[0]) + ", want " + std::to_string(sum);
      return on_world();
    });
    BOOST_TEST(e.empty(), e);
  }
}

BOOST_AUTO_TEST_CASE(dup_and_nested_splits_keep_their_messages_apart) {
  for (int p : world_sizes) {
    auto e = everywhere(p, [p](auto& comm) -> std::string {
      int const me = comm.rank();
      auto d = comm.dup();
      if (d.size() != p || d.rank() != me || d.context() == comm.context())
        return "dup is rank " + std::to_string(d.rank()) + " of " + std::to_string(d.size());
      // The same peer and tag on both: received in the other order, each gets its own.
      if (p > 1) {
        int const to = (me + 1) % p, from = (me + p - 1) % p;
        comm.send(to, 100 + me, gcl::tag{5});
        d.send(to, 200 + me, gcl::tag{5});
        int on_dup = 0, on_world = 0;
        d.recv(from, on_dup, gcl::tag{5});
        comm.recv(from, on_world, gcl::tag{5});
        if (on_dup != 200 + from || on_world != 100 + from)
          return "dup got " + std::to_string(on_dup) + ", world got " + std::to_string(on_world);
      }
      // Halves of the dup, then halves of those (by key reversed): a split of a split.
      auto half = *d.split(me < p / 2 ? 0 : 1, me);
      auto quarter = *half.split(half.rank() % 2, -half.rank());
      std::vector<int> q{me}, want;
      for (int r = 0; r < p; ++r)
        if ((r < p / 2) == (me < p / 2)) want.push_back(r);
      std::vector<int> in_half;
      for (std::size_t i = 0; i < want.size(); ++i)
        if (static_cast<int>(i % 2) == half.rank() % 2) in_half.push_back(want[i]);
      std::reverse(in_half.begin(), in_half.end());
      std::vector<int> got(in_half.size());
      gcl::all_gather(quarter, q, got, gcl::direct{});
      if (got != in_half) return "quarter " + text(got) + ", want " + text(in_half);
      // The world's collectives still line up after all this.
      int root_value = me == p - 1 ? 42 : 0;
      gcl::broadcast(comm, root_value, p - 1, gcl::tree{});
      return root_value == 42 ? "" : "broadcast gave " + std::to_string(root_value);
    });
    BOOST_TEST(e.empty(), e);
  }
}

BOOST_AUTO_TEST_CASE(a_context_taken_again_starts_a_new_history) {
  // A communicator is destroyed and the next dup takes its context id again; its collectives
  // number from #1 once more. Rank 0 runs the new communicator's first collective (a broadcast
  // it roots: it sends and returns) before rank 1 has begun it, and tells rank 1 so over the
  // world, and both run a collective of the world. Rank 1's transport must take the early
  // message as ahead of its new #1, not as a message of the old communicator's #1 that it
  // "finished without receiving" (a false mismatch seen once in the MPICH peer tests, where
  // MTest frees and makes communicators).
  auto e = everywhere(2, [](auto& comm) -> std::string {
    int const me = comm.rank();
    std::uint32_t old_context = 0;
    {
      auto old = comm.dup();
      old_context = old.context();
      for (int i = 0; i < 3; ++i) {  // the old history: #1..#3, the first like the new #1
        int v = me == 0 ? 7 + i : 0;
        gcl::broadcast(old, v, 0, gcl::tree{});
        if (v != 7 + i)
          return "old broadcast #" + std::to_string(i + 1) + " gave " + std::to_string(v);
      }
    }
    auto again = comm.dup();
    if (again.context() != old_context)
      return "the second dup took context " + std::to_string(again.context()) + ", not " +
             std::to_string(old_context);
    int v = me == 0 ? 7 : 0;
    if (me == 0) {
      gcl::broadcast(again, v, 0, gcl::tree{});
      comm.send(1, 1, gcl::tag{9});
    } else {
      int sent = 0;
      comm.recv(0, sent, gcl::tag{9});  // rank 0's #1 message arrived before this one
    }
    // A collective of the world while it waits: beginning one checks what has arrived (shm
    // checks only then, which is where the MPICH test met it: in its next MPI_Allreduce).
    int world_sum = me + 1;
    gcl::all_reduce(comm, std::span(&world_sum, 1), gcl::sum{}, gcl::direct{});
    if (world_sum != 3) return "the world's all_reduce gave " + std::to_string(world_sum);
    if (me == 1) gcl::broadcast(again, v, 0, gcl::tree{});
    if (v != 7) return "the new broadcast gave " + std::to_string(v);
    // And the new communicator goes on: a collective that needs both ranks.
    int sum = me + 1;
    gcl::all_reduce(again, std::span(&sum, 1), gcl::sum{}, gcl::direct{});
    return sum == 3 ? "" : "all_reduce gave " + std::to_string(sum);
  });
  BOOST_TEST(e.empty(), e);
}

BOOST_AUTO_TEST_CASE(counting_counts_each_communicator_as_a_world_of_its_size) {
  // A ring all_reduce on a sub-communicator of q ranks sends what it sends on a world of q:
  // 2(q - 1) messages per rank in 2(q - 1) rounds, counted apart from the world's.
  for (int p : world_sizes) {
    auto stats = gcl::spawn<gcl::counting<gcl::inproc_transport>>(p, [](auto& comm) {
      auto sub = *comm.split(comm.rank() % 2, comm.rank());
      std::vector<int> v(1000, 1);
      gcl::all_reduce(sub, v, gcl::sum{}, gcl::ring{});
      gcl::transport_stats s = sub.stats();
      return std::pair(s, comm.stats());
    });
    for (int r = 0; r < p; ++r) {
      int const q = r % 2 == 0 ? (p + 1) / 2 : p / 2;
      auto const& [sub, world] = stats[static_cast<std::size_t>(r)];
      auto const want = q == 1 ? 0u : 2u * static_cast<unsigned>(q - 1);
      BOOST_TEST(sub.messages_sent == want, "P=" << p << " rank " << r);
      BOOST_TEST(sub.rounds == static_cast<int>(want), "P=" << p << " rank " << r);
      // The world saw only the split's exchange (doc/algorithms.md): a message of 136 bytes to
      // each other rank, N - 1 rounds.
      BOOST_TEST(world.messages_sent == static_cast<unsigned>(p - 1), "P=" << p << " rank " << r);
      BOOST_TEST(world.bytes_sent == 136u * static_cast<unsigned>(p - 1),
                 "P=" << p << " rank " << r);
      BOOST_TEST(world.rounds == p - 1, "P=" << p << " rank " << r);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_mismatch_inside_a_group_names_ranks_in_both_numberings) {
  // Ranks 1 and 3 of 4 form communicator {1, 3} (0 and 2 join none); they pass different counts
  // to all_reduce. Each of the two records what its own call threw (spawn rethrows only the
  // first error, which under load may be another rank's view of the abort), then rethrows.
  struct outcome {
    std::string what;
    gcl::errc code{};
  };
  auto over = [&]<class Transport>() {
    std::vector<outcome> got(4);
    auto f = [&](auto& comm) {
      auto sub = comm.split(comm.rank() % 2 == 1 ? 0 : comm.no_color, comm.rank());
      if (!sub) return;
      std::vector<int> v(comm.rank() == 3 ? 7 : 5, 1);
      try {
        gcl::all_reduce(*sub, v, gcl::sum{}, gcl::direct{});
        got[static_cast<std::size_t>(comm.rank())].what = "the all_reduce returned";
      } catch (gcl::transport_error const& e) {
        got[static_cast<std::size_t>(comm.rank())] = {e.what(),
                                                      static_cast<gcl::errc>(e.code().value())};
        throw;
      }
    };
    typename Transport::options o;
    o.timeout = std::chrono::seconds{10};
    try {
      gcl::spawn<Transport>(4, f, o);
      BOOST_TEST(false, "ranks that passed different counts did not fail");
    } catch (gcl::transport_error const&) {
    }
    // The one that found the mismatch says so; the other may have been told by the abort.
    // Both name the communicator and its ranks in the transport's numbering.
    BOOST_TEST((got[1].code == gcl::errc::mismatch || got[3].code == gcl::errc::mismatch),
               got[1].what << " / " << got[3].what);
    for (int r : {1, 3}) {
      auto const& what = got[static_cast<std::size_t>(r)].what;
      BOOST_TEST(what.find("communicator 1") != std::string::npos, what);
      BOOST_TEST(what.find("are ranks 1, 3 of the transport") != std::string::npos, what);
    }
  };
  over.template operator()<gcl::inproc_transport>();
  over.template operator()<gcl::shm_transport>();
#if defined(GCL_TEST_TCP)
  over.template operator()<gcl::tcp_transport>();
#endif
}

BOOST_AUTO_TEST_CASE(contexts_run_out_with_a_clear_error_and_come_back) {
  auto got = gcl::spawn<gcl::inproc_transport>(2, [](auto& comm) -> std::string {
    using comm_t = std::remove_reference_t<decltype(comm)>;
    std::vector<comm_t> live;
    for (std::uint32_t i = 1; i < gcl::detail::context_count; ++i) live.push_back(comm.dup());
    std::string why;
    try {
      (void)comm.dup();
      return "the 1024th live communicator was made";
    } catch (gcl::usage_error const& e) {
      why = e.what();
    }
    if (why.find("contexts are in use") == std::string::npos) return "error: " + why;
    live.erase(live.begin() + 10);  // frees one id: the next dup takes it
    auto again = comm.dup();
    if (again.context() != 11) return "dup after a free took " + std::to_string(again.context());
    live.clear();
    auto last = comm.dup();  // everything given back: the lowest id again
    return last.context() == 1 ? "" : "dup after clear took " + std::to_string(last.context());
  });
  for (auto const& e : got) BOOST_TEST(e.empty(), e);
}

BOOST_AUTO_TEST_CASE(bad_colors_and_tags_are_usage_errors) {
  auto got = gcl::spawn<gcl::inproc_transport>(2, [](auto& comm) -> std::string {
    try {
      (void)comm.split(-2, 0);
      return "color -2 was accepted";
    } catch (gcl::usage_error const& e) {
      if (std::string(e.what()).find("color -2") == std::string::npos) return e.what();
    }
    auto d = comm.dup();
    try {
      d.send(1 - d.rank(), 1, gcl::tag{gcl::tag_user_limit});
      return "tag 2^20 was accepted";
    } catch (gcl::usage_error const&) {
    }
    return "";
  });
  for (auto const& e : got) BOOST_TEST(e.empty(), e);
}
