#pragma once
// What a rank knows of its own collectives, kept by the call-aware transports (inproc, tcp) so
// that every message of another rank's collective is checked against this rank's view of the
// same call as soon as both exist -- when the message arrives, or when this rank begins that
// call -- whoever sent it and whether or not this rank was about to read it. And what a rank
// says of every rank's progress when a collective times out.
//
// The rule behind the check: every message a collective sends is received within the same
// collective on the receiving rank (all of gcl's algorithms are self-contained). So a message
// of collective #s is wrong if the receiver is in its own #s and that is another call, or if
// the receiver has already finished its #s without reading it.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "../call_info.hpp"

namespace gcl::detail {

/// "collective #3: rank 1 called broadcast #3 (tree, 10 x int32, root 1), rank 0 called
/// broadcast #3 (tree, 10 x int32, root 0)"
inline std::string two_calls(int rank_a, call_info const& a, int rank_b, call_info const& b) {
  return "collective " + sequence_text(a.sequence) + ": rank " + std::to_string(rank_a) +
         " called " + describe(a) + ", rank " + std::to_string(rank_b) + " called " + describe(b);
}

class call_progress {
 public:
  /// What a message of a collective means to this rank.
  enum class verdict {
    fine,      ///< this rank is in that very call (or the message is point-to-point)
    ahead,     ///< the sender is ahead: check again when this rank begins that call
    conflict,  ///< this rank is in the same-numbered call, and it is another call
    stale,     ///< this rank finished that call without reading the message
  };

  /// A collective begins (`c.kind` is not point_to_point) or ends (it is).
  void set(call_info const& c) {
    if (c.kind == call_kind::point_to_point) {
      line(current_).in_call = false;
      return;
    }
    current_ = c.sequence >> sequence_context_shift;
    auto& l = line(current_);
    l.started = c.sequence;
    l.in_call = true;
    l.recent[c.sequence % l.recent.size()] = c;
  }

  /// The communicator of context `context` is gone from this rank (destroyed): forget its
  /// collectives. Its id may be taken again by a communicator that numbers from #1 anew, whose
  /// messages can arrive before this rank has begun (or even made) it; compared with the old
  /// history they would look stale. After this they are ahead, as a new context's are.
  void forget(std::uint32_t context) {
    if (context == 0 || context >= lines_.size()) return;  // the world's is never given back
    lines_[context] = timeline{};
    if (current_ == context) current_ = 0;
  }

  /// The sequence number of this rank's last collective begun (in the communicator of the
  /// last call), 0 if none.
  std::uint64_t started() const noexcept { return line(current_).started; }
  bool in_call() const noexcept { return line(current_).in_call; }
  /// This rank's collective #`sequence`, if it is recent enough to be remembered.
  call_info const* recall(std::uint64_t sequence) const noexcept {
    auto const& l = line(sequence >> sequence_context_shift);
    if ((sequence & ~context_bits_mask) == 0 || sequence > l.started ||
        l.started - sequence >= l.recent.size())
      return nullptr;
    return &l.recent[sequence % l.recent.size()];
  }

  verdict check(call_info const& theirs) const noexcept {
    if (theirs.kind == call_kind::point_to_point) return verdict::fine;
    auto const& l = line(theirs.sequence >> sequence_context_shift);
    if (theirs.sequence > l.started) return verdict::ahead;
    if (theirs.sequence == l.started && l.in_call)
      return theirs == l.recent[l.started % l.recent.size()] ? verdict::fine : verdict::conflict;
    return verdict::stale;
  }

  /// This rank's last collective begun; sequence 0 (point_to_point) if none.
  call_info last() const noexcept {
    auto const& l = line(current_);
    if (l.started == 0) return {};
    return l.recent[l.started % l.recent.size()];
  }

  /// What it means that rank `peer` ended its job after its collective `last` (sequence 0: it
  /// called none), as its bye says: empty unless this rank has begun a collective that `peer`
  /// never called (a later one, or another call of the same number) in the communicator of
  /// `last` (the world's when `peer` called none).
  ///   "collective #4: rank 0 called broadcast #4 (...), but rank 1 ended its job after
  ///    collective #3 (all_reduce #3 (...))"
  std::string ended_disagreement(int me, int peer, call_info const& last) const {
    auto const& l = line(last.sequence >> sequence_context_shift);
    if (l.started == 0 || last.sequence > l.started) return {};
    auto const& mine = l.recent[l.started % l.recent.size()];
    if (last.sequence == l.started)
      return last == mine ? std::string() : two_calls(peer, last, me, mine);
    return "collective " + sequence_text(l.started) + ": rank " + std::to_string(me) + " called " +
           describe(mine) + ", but rank " + std::to_string(peer) + " ended its job after " +
           (last.sequence == 0
                ? std::string("calling no collective")
                : "collective " + sequence_text(last.sequence) + " (" + describe(last) + ")");
  }

  /// The message for a `conflict` or `stale` verdict: both ranks and both calls.
  ///   "collective #3: rank 1 called broadcast #3 (tree, 10 x int32, root 1), rank 0 called
  ///    broadcast #3 (tree, 10 x int32, root 0)"
  std::string disagreement(int me, int sender, call_info const& theirs) const {
    std::string s;
    if (auto const* mine = recall(theirs.sequence))
      s = two_calls(sender, theirs, me, *mine);
    else
      s = "collective " + sequence_text(theirs.sequence) + ": rank " + std::to_string(sender) +
          " called " + describe(theirs) + ", rank " + std::to_string(me) +
          " is already at collective " +
          sequence_text(line(theirs.sequence >> sequence_context_shift).started);
    if (check(theirs) == verdict::stale)
      s += " and finished it without receiving rank " + std::to_string(sender) + "'s message";
    return s;
  }

 private:
  // One timeline per communicator (the context in a sequence number's high bits: the
  // communicators made by split and dup number their collectives apart from the world's, and
  // a message is compared only with calls of its own communicator).
  struct timeline {
    std::uint64_t started = 0;  // the sequence number of the last collective begun
    bool in_call = false;
    std::array<call_info, 16> recent{};  // recent[s % 16]: this rank's collective #s
  };
  static constexpr std::uint64_t context_bits_mask =
      ~((std::uint64_t{1} << sequence_context_shift) - 1);

  timeline& line(std::uint64_t context) {
    if (context >= lines_.size()) lines_.resize(static_cast<std::size_t>(context) + 1);
    return lines_[static_cast<std::size_t>(context)];
  }
  timeline const& line(std::uint64_t context) const noexcept {
    static timeline const none;
    return context < lines_.size() ? lines_[static_cast<std::size_t>(context)] : none;
  }

  std::uint64_t current_ = 0;  // the communicator of the last call begun
  std::vector<timeline> lines_ = std::vector<timeline>(1);  // [0]: the world's
};

/// One rank's answer to "where are you?", for timeout messages.
struct rank_status {
  int rank = 0;
  bool answered = false;      // false: it did not answer (stopped, hung, or gone)
  std::uint64_t started = 0;  // its last collective begun
  bool in_call = false;       // still inside it
  int waiting_for = -1;       // the rank it is blocked on, -1 if none
  call_info call;             // its collective #started, if any
};

/// "rank 2 has not started all_reduce #10 (its last collective is #9); ranks 0, 1 and 3 are
/// waiting in it (0 for 3, 1 for 0, 3 for 2)": who holds up collective `mine` (this rank's
/// current call), from every rank's status. Outside a collective, the same about the latest
/// collective some rank is waiting in (this rank may be the one holding it up). Empty if none.
inline std::string describe_stall(call_info mine, std::vector<rank_status> const& all) {
  if (mine.kind == call_kind::point_to_point) {
    for (auto const& r : all)
      if (r.answered && r.in_call && r.started > mine.sequence) mine = r.call;
    if (mine.kind == call_kind::point_to_point) return {};
  }
  auto const s = mine.sequence;
  std::string const what = std::string(name_of(mine.kind)) + " " + sequence_text(s);
  std::vector<int> silent, behind, waiting, waiting_on, done;
  std::vector<std::uint64_t> behind_at;
  for (auto const& r : all) {
    if (!r.answered)
      silent.push_back(r.rank);
    else if (r.started < s) {
      behind.push_back(r.rank);
      behind_at.push_back(r.started);
    } else if (r.started == s && r.in_call) {
      waiting.push_back(r.rank);
      waiting_on.push_back(r.waiting_for);
    } else
      done.push_back(r.rank);
  }
  auto list = [](std::vector<int> const& v) {
    std::string t = v.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < v.size(); ++i)
      t += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + std::to_string(v[i]);
    return t;
  };
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < behind.size(); ++i)
    parts.push_back("rank " + std::to_string(behind[i]) + " has not started " + what +
                    (behind_at[i] == 0
                         ? " (it has started no collective)"
                         : " (its last collective is " + sequence_text(behind_at[i]) + ")"));
  if (!silent.empty())
    parts.push_back(list(silent) + (silent.size() == 1 ? " does" : " do") +
                    " not answer (stopped, hung, or gone)");
  if (!waiting.empty()) {
    std::string t = list(waiting) + (waiting.size() == 1 ? " is" : " are") + " waiting in it";
    std::string on;
    for (std::size_t i = 0; i < waiting.size(); ++i)
      if (waiting_on[i] >= 0)
        on += (on.empty() ? "" : ", ") + std::to_string(waiting[i]) + " for " +
              std::to_string(waiting_on[i]);
    if (!on.empty()) t += " (" + on + ")";
    parts.push_back(t);
  }
  if (!done.empty())
    parts.push_back(list(done) + (done.size() == 1 ? " has" : " have") + " finished it");
  std::string out;
  for (auto const& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

/// A timeout's message, the cause first: "gcl: rank 1: all_reduce #10 (ring, ...) timed out
/// after 30 s: rank 2 does not answer (...); ranks 0, 1 and 3 are waiting in it (...) (this rank
/// was waiting to recv from rank 0 (8 bytes, library tag ...)). Received here but not read: ..."
/// Without a stall to describe, the wait itself leads, as before.
inline std::string timeout_text(std::string const& prefix, call_info const& call,
                                std::string const& waited, std::string const& after,
                                std::string const& stall, std::string const& unread) {
  if (stall.empty())
    return prefix + waited + " (" + describe(call) + ") timed out after " + after + unread;
  return prefix + describe(call) + " timed out after " + after + ": " + stall +
         " (this rank was waiting to " + waited + ")" + unread;
}

}  // namespace gcl::detail
