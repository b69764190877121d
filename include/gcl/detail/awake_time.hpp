#pragma once
// How long a wait has lasted in time its own process was seen to run.
//
// A rank that has timed out gives its peers a short window to say where they are before it
// calls the silent ones "stopped, hung, or gone". Measured on the wall clock, that window also
// runs while the waiting process itself cannot run (a virtual machine whose host is busy, a CPU
// quota used up, an overloaded machine), or while the thread that would read the answers
// cannot: the window ends before any answer could be read, and the rank blames live peers
// (seen in CI: three survivors of a stopped rank each named the other two as silent). So the
// waiter looks at the clock after every short sleep, and counts the time since its last look
// only if that gap is about the sleep it asked for and the threads it depends on ran meanwhile.

#include <chrono>

namespace gcl::detail {

class awake_time {
 public:
  using clock = std::chrono::steady_clock;

  /// Counting from `start`; a gap between two looks longer than `stall` is not counted.
  awake_time(clock::time_point start, clock::duration stall) noexcept
      : last_(start), stall_(stall) {}

  /// The waiter runs at `now`. `helpers_ran`: what else the wait depends on in this process (a
  /// transport's I/O thread) was seen to run since the last look; if not, the gap is not
  /// counted either.
  void look(clock::time_point now, bool helpers_ran = true) noexcept {
    auto const gap = now - last_;
    if (helpers_ran && gap > clock::duration::zero() && gap <= stall_) counted_ += gap;
    if (now > last_) last_ = now;
  }

  /// The time counted so far.
  clock::duration counted() const noexcept { return counted_; }

 private:
  clock::time_point last_;
  clock::duration stall_;
  clock::duration counted_{};
};

}  // namespace gcl::detail
