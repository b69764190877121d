#pragma once
/// \file
/// gcl's error model: `transport_error` for what went wrong on the wire or in a peer,
/// `usage_error` for what the caller passed.

#include <stdexcept>
#include <string>
#include <system_error>

namespace gcl {

/// Why a transport call failed. Carried by `transport_error::code()`.
///
///     try { gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{}); }
///     catch (gcl::transport_error const& e) { if (e.code() == gcl::errc::timeout) retry(); }
enum class errc {
  connection_refused = 1,  ///< a peer could not be reached at rendezvous
  peer_closed,             ///< a peer's connection ended (the peer died or left)
  timeout,                 ///< a blocking call waited longer than the transport's timeout
  aborted,                 ///< another rank failed and the group was torn down
  protocol,                ///< bytes that are not gcl's protocol (wrong magic, token, version)
  mismatch,                ///< ranks disagree about the call: kind, count, type, root or size
};

/// The `std::error_category` of `gcl::errc`; its name is "gcl".
inline std::error_category const& error_category() noexcept {
  struct category final : std::error_category {
    char const* name() const noexcept override { return "gcl"; }
    std::string message(int value) const override {
      switch (static_cast<errc>(value)) {
        case errc::connection_refused:
          return "connection refused";
        case errc::peer_closed:
          return "peer closed the connection";
        case errc::timeout:
          return "timed out";
        case errc::aborted:
          return "aborted because another rank failed";
        case errc::protocol:
          return "protocol violation";
        case errc::mismatch:
          return "ranks disagree about the call";
      }
      return "unknown gcl error";
    }
  };
  static category const instance;
  return instance;
}

/// Lets `errc` values compare with and convert to `std::error_code`.
inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// A communication failure: I/O, a dead or mismatched peer, a timeout, an abort.
/// `what()` names the ranks and the call involved. A transport that threw one may be
/// poisoned: treat the communicator as unusable afterwards.
///
///     catch (gcl::transport_error const& e) { std::cerr << e.what() << '\n'; }
class transport_error : public std::system_error {
 public:
  transport_error(errc code, std::string const& what)
      : std::system_error(make_error_code(code), what) {}
};

/// A bad argument: a rank out of range, a root >= size, buffers of the wrong size.
/// Thrown before anything is sent, so the communicator stays usable.
///
///     gcl::broadcast(comm, v, /*root=*/comm.size(), gcl::tree{});  // throws gcl::usage_error
class usage_error : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace gcl

template <>
struct std::is_error_code_enum<gcl::errc> : std::true_type {};
