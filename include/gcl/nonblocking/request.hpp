#pragma once
/// \file
/// `collective_request`: the handle of a non-blocking collective (`gcl::iall_reduce` and the
/// rest, collective/nonblocking.hpp), as MPI_Request is for MPI_Iallreduce and torch's Work
/// for `async_op=True`.

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "../log.hpp"

namespace gcl {

namespace detail {

// What a request and the thread that runs its collective share.
struct collective_state {
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  bool observed = false;     // wait() or test() has seen the outcome
  std::exception_ptr error;  // what the collective threw
  std::string name;          // "all_reduce": for the warning about an unobserved failure
  std::chrono::steady_clock::time_point began{}, ended{};

  // On the progress thread, once the collective has run (or could not).
  void finish(std::exception_ptr e, std::chrono::steady_clock::time_point from,
              std::chrono::steady_clock::time_point to) {
    {
      std::lock_guard lock(mutex);
      error = std::move(e);
      began = from;
      ended = to;
      finished = true;
    }
    finished_cv.notify_all();
  }
};

struct request_access;

}  // namespace detail

/// A non-blocking collective in flight. Its buffers belong to gcl until `wait()` returns (or
/// `test()` returns true); the collective progresses on its own meanwhile, whether or not the
/// caller tests it. Movable, not copyable; destroying one that is still running waits for it
/// (the buffers must outlive it), and a failure nobody looked at is logged as a warning.
///
///     auto r = gcl::iall_reduce(comm, grads, gcl::sum{});
///     compute();  // the all_reduce runs meanwhile
///     r.wait();   // grads holds the sum, or the collective's error is thrown here
class collective_request {
 public:
  /// An empty request: already complete.
  collective_request() = default;
  collective_request(collective_request&&) noexcept = default;
  collective_request& operator=(collective_request&& other) noexcept {
    if (this != &other) {
      settle();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  collective_request(collective_request const&) = delete;
  collective_request& operator=(collective_request const&) = delete;
  ~collective_request() { settle(); }

  /// Blocks until the collective has finished; throws what it threw (the error a blocking call
  /// would have thrown: timeout, dead peer, mismatch), each time it is called.
  void wait() {
    if (!state_) return;
    std::unique_lock lock(state_->mutex);
    state_->finished_cv.wait(lock, [&] { return state_->finished; });
    state_->observed = true;
    if (state_->error) std::rethrow_exception(state_->error);
  }

  /// True once the collective has finished (then throws what `wait()` would); never blocks.
  bool test() {
    if (!state_) return true;
    {
      std::lock_guard lock(state_->mutex);
      if (!state_->finished) return false;
    }
    wait();
    return true;
  }

  /// How long the collective ran once its turn came (the progress thread runs a
  /// communicator's collectives one after another, in the order they were started); zero until
  /// it has finished. With the time spent in `wait()`, what was hidden behind computation.
  std::chrono::steady_clock::duration run_time() const {
    if (!state_) return {};
    std::lock_guard lock(state_->mutex);
    return state_->finished ? state_->ended - state_->began : std::chrono::steady_clock::duration{};
  }

  /// False for an empty (default-constructed or moved-from) request.
  bool valid() const noexcept { return state_ != nullptr; }

 private:
  friend struct detail::request_access;
  explicit collective_request(std::shared_ptr<detail::collective_state> s) : state_(std::move(s)) {}

  // Waits for a request being dropped: the collective may still be writing its buffers.
  void settle() noexcept {
    if (!state_) return;
    {
      std::unique_lock lock(state_->mutex);
      state_->finished_cv.wait(lock, [&] { return state_->finished; });
    }  // finished: the progress thread writes the state no more (and unlocked before reset)
    if (state_->error && !state_->observed) {
      try {
        std::rethrow_exception(state_->error);
      } catch (std::exception const& e) {
        detail::log(log_level::warning,
                    std::string("gcl: a non-blocking ") + state_->name +
                        " failed and its request was dropped without wait(): " + e.what());
      } catch (...) {
        detail::log(log_level::warning, std::string("gcl: a non-blocking ") + state_->name +
                                            " failed and its request was dropped without wait()");
      }
    }
    state_.reset();
  }

  std::shared_ptr<detail::collective_state> state_;
};

namespace detail {
// The progress engine makes requests of the states it shares with them.
struct request_access {
  static collective_request make(std::shared_ptr<collective_state> s) {
    return collective_request(std::move(s));
  }
};
}  // namespace detail

}  // namespace gcl
