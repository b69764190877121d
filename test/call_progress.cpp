// What a rank concludes from another rank's message, goodbye or status: the rules behind the
// transports' mismatch checks and timeout messages, without any transport.
#define BOOST_TEST_MODULE call_progress
#include <boost/test/unit_test.hpp>

#include <gcl/detail/call_progress.hpp>
#include <gcl/detail/context.hpp>

#include <string>
#include <vector>

using gcl::call_info;
using gcl::call_kind;
using gcl::detail::call_progress;
using verdict = call_progress::verdict;

namespace {

call_info call(call_kind kind, std::uint64_t sequence, int root = -1) {
  auto c = gcl::make_call_info<float>(kind, 10, root, kind == call_kind::broadcast ? "" : "sum",
                                      kind == call_kind::broadcast ? "tree" : "ring");
  c.sequence = sequence;
  return c;
}

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_message_is_judged_against_the_receivers_own_call) {
  call_progress p;
  auto const first = call(call_kind::all_reduce, 1);
  BOOST_TEST((p.check(first) == verdict::ahead));  // the receiver has not begun it yet
  p.set(first);
  BOOST_TEST((p.check(first) == verdict::fine));
  BOOST_TEST((p.check(call(call_kind::broadcast, 1, 0)) == verdict::conflict));
  BOOST_TEST((p.check(call(call_kind::all_reduce, 2)) == verdict::ahead));
  BOOST_TEST((p.check(call_info{}) == verdict::fine));  // point-to-point: not a collective's
  p.set(call_info{});                                   // the collective returned
  BOOST_TEST((p.check(first) == verdict::stale));       // finished without reading it
  auto text = p.disagreement(0, 1, call(call_kind::all_reduce, 1));
  BOOST_TEST(contains(text, "finished it without receiving rank 1's message"), text);
}

BOOST_AUTO_TEST_CASE(a_forgotten_context_starts_again_without_its_old_calls) {
  // Communicator 3 ran collectives #1 and #2 and was destroyed; a new one takes context 3 and
  // numbers from #1: its messages are ahead of this rank, not stale.
  auto in_3 = [](std::uint64_t n) {
    return call(call_kind::all_reduce, gcl::detail::context_sequence(n, 3));
  };
  call_progress p;
  p.set(in_3(1));
  p.set(call_info{});
  p.set(in_3(2));
  p.set(call_info{});
  p.set(call(call_kind::all_reduce, 1));  // the world's #1, during which the message arrives
  BOOST_TEST((p.check(in_3(1)) == verdict::stale));
  p.forget(3);
  BOOST_TEST((p.check(in_3(1)) == verdict::ahead));
  BOOST_TEST((p.check(call(call_kind::all_reduce, 1)) == verdict::fine));  // the world's kept
  p.forget(0);  // the world's context is never forgotten
  BOOST_TEST((p.check(call(call_kind::all_reduce, 1)) == verdict::fine));
  p.set(call_info{});
  p.set(in_3(1));
  BOOST_TEST((p.check(in_3(1)) == verdict::fine));
}

BOOST_AUTO_TEST_CASE(a_disagreement_names_both_ranks_and_both_calls) {
  call_progress p;
  p.set(call(call_kind::broadcast, 1, 0));
  auto text = p.disagreement(0, 1, call(call_kind::broadcast, 1, 1));
  BOOST_TEST(text ==
                 "collective #1: rank 1 called broadcast #1 (tree, 10 x float32, root 1), rank 0 "
                 "called broadcast #1 (tree, 10 x float32, root 0)",
             text);
}

BOOST_AUTO_TEST_CASE(a_goodbye_after_an_earlier_or_another_call_is_a_disagreement) {
  call_progress p;
  // The peer ended after collective #1 before this rank began anything: nothing to say yet.
  BOOST_TEST(p.ended_disagreement(0, 1, call(call_kind::all_reduce, 1)).empty());
  p.set(call(call_kind::all_reduce, 1));
  BOOST_TEST(p.ended_disagreement(0, 1, call(call_kind::all_reduce, 1)).empty());  // same call
  BOOST_TEST(p.ended_disagreement(0, 1, call(call_kind::all_reduce, 2)).empty());  // it is ahead
  auto other = p.ended_disagreement(0, 1, call(call_kind::broadcast, 1, 1));
  BOOST_TEST(contains(other, "rank 1 called broadcast #1"), other);
  BOOST_TEST(contains(other, "rank 0 called all_reduce #1"), other);
  p.set(call_info{});
  p.set(call(call_kind::broadcast, 2, 0));
  auto later = p.ended_disagreement(0, 3, call(call_kind::all_reduce, 1));
  BOOST_TEST(later ==
                 "collective #2: rank 0 called broadcast #2 (tree, 10 x float32, root 0), but rank "
                 "3 ended its job after collective #1 (all_reduce #1 (ring, sum, 10 x float32))",
             later);
  auto none = p.ended_disagreement(0, 3, call_info{});
  BOOST_TEST(contains(none, "rank 3 ended its job after calling no collective"), none);
  BOOST_TEST((p.last() == call(call_kind::broadcast, 2, 0)));
  BOOST_TEST((call_progress{}.last() == call_info{}));
}

BOOST_AUTO_TEST_CASE(a_stall_names_who_holds_up_the_call) {
  auto const mine = call(call_kind::all_reduce, 10);
  std::vector<gcl::detail::rank_status> all(4);
  for (int r = 0; r < 4; ++r) {
    all[r].rank = r;
    all[r].answered = true;
    all[r].started = 10;
    all[r].in_call = true;
    all[r].call = mine;
  }
  all[0].waiting_for = 3;
  all[1].waiting_for = 0;
  all[3].waiting_for = 2;
  all[2].answered = false;
  BOOST_TEST(gcl::detail::describe_stall(mine, all) ==
             "rank 2 does not answer (stopped, hung, or gone); ranks 0, 1 and 3 are waiting in it "
             "(0 for 3, 1 for 0, 3 for 2)");
  all[2].answered = true;
  all[2].started = 9;
  all[2].in_call = false;
  BOOST_TEST(contains(gcl::detail::describe_stall(mine, all),
                      "rank 2 has not started all_reduce #10 (its last collective is #9)"));
}
