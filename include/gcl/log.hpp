#pragma once
/// \file
/// gcl's one way of saying something that is not an exception: a refused stranger on a TCP
/// port, an accept loop that is backing off, an error found after a rank's last call (just
/// before the process ends), and automatic's decisions under `GCL_DEBUG`. Every such message
/// goes to one handler, which by default writes it to stderr as a line, as gcl always did; a
/// program that owns its output (a logger, a GUI, a test) sets its own:
///
///     void to_my_logger(gcl::log_level level, std::string_view message) {
///       my_logger.write(level >= gcl::log_level::warning ? "WARN" : "INFO", message);
///     }
///     gcl::set_log_handler(&to_my_logger);   // every later message
///     gcl::set_log_handler(nullptr);         // back to stderr
///
/// Messages are one line or a few, without the final newline, and start with "gcl: " (and the
/// rank, where there is one). Debug messages (automatic's decisions) are made only when the
/// environment variable `GCL_DEBUG` is set to anything but "" or "0", read once per process;
/// the others always are.

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace gcl {

/// How much a message matters: `debug` (only under GCL_DEBUG), `info`, `warning` (something
/// went wrong and gcl carries on: a stranger refused, accept retried), `error` (the job or the
/// process cannot go on).
enum class log_level { debug, info, warning, error };

/// Receives every message gcl writes. It may be called from any thread (a rank's, a TCP
/// transport's I/O thread), by several at once, and from destructors and just before
/// `std::abort()`: it must be thread-safe and should return quickly. An exception it throws is
/// swallowed (there is nowhere to report it).
using log_handler = void (*)(log_level level, std::string_view message);

/// The handler in use unless another is set: writes `message` and a newline to stderr, in one
/// call (stdio locks the stream for it, so lines from several threads do not interleave), then
/// flushes, which matters when the process is about to end.
inline void default_log_handler(log_level, std::string_view message) noexcept {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

namespace detail {
// One per program: an inline variable has a single instance however many translation units
// include this header (per shared library, when each has its own hidden copy of gcl). Atomic,
// because any thread may log while another sets the handler.
inline std::atomic<log_handler> log_handler_in_use{&default_log_handler};
}  // namespace detail

/// Sends gcl's messages to `handler` from now on; `nullptr` restores `default_log_handler`.
/// Returns the handler it replaces, so that a scope can put it back. A message being delivered
/// while the handler changes may still reach the previous one.
///
///     auto previous = gcl::set_log_handler(&mine);
///     ...
///     gcl::set_log_handler(previous);
inline log_handler set_log_handler(log_handler handler) noexcept {
  return detail::log_handler_in_use.exchange(handler != nullptr ? handler : &default_log_handler,
                                             std::memory_order_acq_rel);
}

/// The handler messages go to now.
inline log_handler get_log_handler() noexcept {
  return detail::log_handler_in_use.load(std::memory_order_acquire);
}

namespace detail {

/// Hands `message` to the handler in use. Every message gcl writes goes through here.
inline void log(log_level level, std::string_view message) noexcept {
  try {
    get_log_handler()(level, message);
  } catch (...) {  // a handler that throws loses its message, not the caller's state
  }
}

/// Whether debug messages are wanted: `GCL_DEBUG` is set to anything but "" or "0". Read once
/// per process (the first time a debug message could be made), so that the check costs a load
/// afterwards; callers test it before they spend anything on formatting.
inline bool debug_log_enabled() noexcept {
  static bool const enabled = [] {
    char const* v = std::getenv("GCL_DEBUG");
    return v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
  }();
  return enabled;
}

/// printf into a std::string: messages keep the formats they were written with.
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string
log_text(char const* format, ...) {
  std::va_list args;
  va_start(args, format);
  std::va_list again;
  va_copy(again, args);
  int const n = std::vsnprintf(nullptr, 0, format, again);
  va_end(again);
  std::string text(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, args);
  va_end(args);
  return text;
}

}  // namespace detail

}  // namespace gcl
