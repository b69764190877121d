#pragma once
// What the ranks of one spawn group share to stop together: a flag, the first reason, and the
// transports to wake when it is raised.

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../../error.hpp"

namespace gcl::detail {

// A spawn group's shared abort flag and the transports to wake when it is raised.
struct tcp_abort_state {
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  std::string reason;
  errc code = errc::aborted;
  // Made by tcp_transport::group (ranks are threads of this process, and spawn reports the
  // group's failure) rather than for one standalone rank.
  bool group = false;
  std::vector<std::pair<void const*, std::function<void()>>> members;

  // `reason` and `code` are written once, before `aborted` is raised, and never again: why()
  // needs no lock, so a transport may call it while holding its own mutex (abort() takes them in
  // the other order).
  void abort(std::string const& why, errc c = errc::aborted) {
    std::lock_guard lock(mutex);
    if (aborted.load()) return;
    reason = why;
    code = c;
    aborted.store(true, std::memory_order_release);
    for (auto& m : members) m.second();
  }
  std::string why() const { return aborted.load(std::memory_order_acquire) ? reason : ""; }
};

}  // namespace gcl::detail
