#pragma once
// log_recording: for its scope, every message gcl logs (gcl::set_log_handler) goes to a record
// instead of stderr, with its level; the handler that was set comes back at the end. Handlers are
// plain functions, so the record is global; a mutex, because gcl may log from any thread (a TCP
// transport's I/O thread). Include after <boost/test/unit_test.hpp>.

#include <gcl/log.hpp>

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gcl_test {

struct log_recording {
  using entry = std::pair<gcl::log_level, std::string>;

  // The handler.
  static void record(gcl::log_level level, std::string_view message) {
    std::lock_guard lock(mutex_);
    received_.emplace_back(level, std::string(message));
  }
  // What was recorded so far, which the record forgets.
  static std::vector<entry> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(received_, {});
  }
  // What was recorded so far with `what` in its text, which the record keeps.
  static std::vector<entry> containing(std::string_view what) {
    std::lock_guard lock(mutex_);
    std::vector<entry> found;
    for (auto const& m : received_)
      if (m.second.find(what) != std::string::npos) found.push_back(m);
    return found;
  }

  gcl::log_handler previous = gcl::set_log_handler(&record);
  log_recording() { take(); }
  ~log_recording() { gcl::set_log_handler(previous); }

 private:
  static inline std::mutex mutex_;
  static inline std::vector<entry> received_;
};

}  // namespace gcl_test
