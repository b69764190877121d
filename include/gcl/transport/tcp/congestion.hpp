#pragma once
// The congestion control of a connection between two ranks of one host: such a connection
// crosses the kernel's loopback, where there is no link to share and nothing to pace, so
// tcp_options::same_host_congestion_control (by default "reno") replaces the system's choice
// there. Why: BBR, the default of many cloud images and of this project's test machine, paces
// what it sends at the bandwidth it has estimated, and on loopback that holds back the bursts
// a collective is made of. Measured on 2 cores, all_reduce at P = 2 back to back, three
// repetitions interleaved (2026-11-26, doc/tcp.md "Congestion control within a host"): 4 MiB
// took 1.30-1.39 ms with bbr and 0.60-0.62 with reno, 16 MiB 5.9-6.1 and 3.4-3.6, 64 MiB
// 23.3-23.6 and 14.0-14.4; up to 1 MiB the two were level. Connections to other hosts keep the
// system's choice, which is the administrator's for that network.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "asio.hpp"

#include "../../error.hpp"

namespace gcl::detail {

// Whether both ends of `s` are on this host: its peer's address is a loopback one or this
// end's own (a connection to an address of this host goes through the loopback too).
inline bool same_host(tcp::socket const& s) {
  auto plain = [](asio::ip::address a) {  // ::ffff:10.0.0.1 is 10.0.0.1
    if (a.is_v6() && a.to_v6().is_v4_mapped())
      return asio::ip::address(asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()));
    return a;
  };
  boost::system::error_code e1, e2;
  auto const local = plain(s.local_endpoint(e1).address());
  auto const remote = plain(s.remote_endpoint(e2).address());
  return !e1 && !e2 && (remote.is_loopback() || remote == local);
}

// The congestion control `fd` uses ("" where the system cannot say).
inline std::string congestion_control_of(int fd) {
#ifdef TCP_CONGESTION
  std::array<char, 64> name{};
  socklen_t len = name.size() - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), &len) != 0) return {};
  return std::string(name.data(), ::strnlen(name.data(), len));
#else
  (void)fd;
  return {};
#endif
}

// The algorithms this kernel has, as /proc says, for messages ("" where it cannot say).
inline std::string available_congestion_controls() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_available_congestion_control");
  std::string list;
  std::getline(f, list);
  return list;
}

// Makes `fd` use congestion control `name`; throws usage_error naming it, the connection
// (`where`) and what the kernel has, where it refuses (no such algorithm, or one that only a
// privileged process may choose and this one cannot).
inline void use_congestion_control(int fd, std::string const& name, std::string const& where) {
#ifdef TCP_CONGESTION
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size())) == 0)
    return;
  int const err = errno;
  std::string const of = where.empty() ? "" : " for the connection to " + where;
  std::string why = err == EPERM    ? "only a privileged process may choose it here (see "
                                      "net.ipv4.tcp_allowed_congestion_control)"
                    : err == ENOENT ? "this kernel has no such algorithm"
                                    : std::strerror(err);
  auto const available = available_congestion_controls();
  throw usage_error(
      "gcl: tcp_options::same_host_congestion_control (GCL_SAME_HOST_CONGESTION) '" + name + "'" +
      of + ": " + why + (available.empty() ? "" : "; this kernel has: " + available) +
      "; \"reno\" is always allowed, and an empty name (GCL_SAME_HOST_CONGESTION=system) "
      "keeps the system's choice");
#else
  (void)fd, (void)name, (void)where;
#endif
}

// Throws as use_congestion_control does where the kernel would refuse `name`: asked of a
// socket of its own, before any connection is made.
inline void check_congestion_control(std::string const& name) {
  int const fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;  // no socket to ask: the connections will say
  try {
    use_congestion_control(fd, name, "");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

}  // namespace gcl::detail
