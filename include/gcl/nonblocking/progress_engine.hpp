#pragma once
/// \file
/// The engine behind a communicator's non-blocking collectives: a lane (a second endpoint of
/// the transport, formed by `fork`, with channels of its own) and a progress thread that runs
/// the collectives started on the communicator, one after another, on the lane.
///
/// Why a lane and a thread: a collective progresses only while some thread runs its sends and
/// receives, and the user's thread is computing (that is the point) or making calls of its own
/// on the communicator, blocking point-to-point ones included. A transport endpoint is used by
/// one thread at a time (doc/requirements/transport.md), so the progress thread gets its own;
/// the user's calls and the queued collectives then never interleave on a channel, and a
/// program that is legal in MPI (rank 0 starts an all_reduce and then sends to rank 1, which
/// receives before it starts the all_reduce) cannot deadlock. Torch's ProcessGroupGloo forms
/// its own connections per group the same way.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "../algorithm/tree.hpp"
#include "../collective/barrier.hpp"
#include "../collective/broadcast.hpp"
#include "../communicator.hpp"
#include "../concepts.hpp"
#include "../fork_bootstrap.hpp"
#include "request.hpp"

namespace gcl::detail {

template <forkable_transport Transport>
class progress_engine {
 public:
  using lane_type = communicator<Transport>;
  // A collective bound to its arguments, run on the lane. Type-erased (one allocation per
  // non-blocking call): the blocking calls stay the allocation-free path.
  using work = std::function<void(lane_type&)>;

  progress_engine() = default;
  progress_engine(progress_engine const&) = delete;
  progress_engine& operator=(progress_engine const&) = delete;

  // Runs what was started and stops: requests outlive their communicator, and the buffers of
  // the queued collectives are the user's until those requests have finished.
  ~progress_engine() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    queued_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // On the user's thread: queues `w` after the collectives started before it. The first call
  // forms the lane, a collective call on `parent` (every rank of it makes it at the same point).
  collective_request start(lane_type& parent, std::string_view name, work w) {
    if (!lane_) form_lane(parent);
    auto state = std::make_shared<collective_state>();
    state->name = name;
    {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(state, std::move(w));
    }
    queued_cv_.notify_one();
    return request_access::make(std::move(state));
  }

 private:
  void form_lane(lane_type& parent) {
    std::vector<int> members(static_cast<std::size_t>(parent.size()));
    for (int r = 0; r < parent.size(); ++r)
      members[static_cast<std::size_t>(r)] = parent.transport_rank(r);
    fork_bootstrap b;
    b.rank = parent.rank();
    b.size = parent.size();
    b.members = members;
    b.broadcast = [&parent](std::span<std::byte> bytes) {
      gcl::broadcast(parent, bytes, 0, tree{});
    };
    b.barrier = [&parent] { gcl::barrier(parent); };
    lane_.emplace(parent.transport().fork(b));
    thread_ = std::thread([this] { run(); });
  }

  // The progress thread: each collective in the order started. After a failure the lane may
  // hold messages of the failed call, so the later ones fail with the same error, unrun.
  void run() {
    std::exception_ptr failure;
    for (;;) {
      std::shared_ptr<collective_state> state;
      work w;
      {
        std::unique_lock lock(mutex_);
        queued_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything started has run
        state = std::move(queue_.front().first);
        w = std::move(queue_.front().second);
        queue_.pop_front();
      }
      auto const began = std::chrono::steady_clock::now();
      std::exception_ptr error = failure;
      if (!error) {
        try {
          w(*lane_);
        } catch (...) {
          error = failure = std::current_exception();
        }
      }
      w = nullptr;  // its copies of the arguments go before the request completes
      state->finish(error, began, std::chrono::steady_clock::now());
    }
  }

  std::optional<lane_type> lane_;  // used by the progress thread only, once formed
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable queued_cv_;
  std::deque<std::pair<std::shared_ptr<collective_state>, work>> queue_;
  bool stopping_ = false;
};

}  // namespace gcl::detail
