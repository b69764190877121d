#pragma once
/// \file
/// Loopback TCP throughput, the ceiling of every collective over gcl's TCP transport on one
/// machine: one connection carrying data one way, and two connections carrying data in
/// opposite directions at once. The second is the ceiling of a ring: every rank sends to its
/// successor while it receives from its predecessor, so with both directions busy the kernel
/// copies twice the bytes on the same cores. Plain sockets, a sender and a receiver thread per
/// connection; nothing here knows gcl. A congestion control may be named: gcl's TCP transport
/// uses "reno" between ranks of one host (include/gcl/transport/tcp/congestion.hpp says why),
/// so the ceiling of its connections is measured with it too, beside the system's.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace bench::loopback {

inline void check(bool ok, char const* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

/// Both ends of one connection over 127.0.0.1: the end that connected and the end accepted,
/// with congestion control `congestion` ("": the system's).
struct connection {
  int connected = -1, accepted = -1;
  explicit connection(std::string const& congestion = {}) {
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    check(listener >= 0, "socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
    socklen_t len = sizeof addr;
    check(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
    check(::listen(listener, 1) == 0, "listen");
    connected = ::socket(AF_INET, SOCK_STREAM, 0);
    check(connected >= 0, "socket");
    // The handshake completes in the kernel's backlog: connect, then accept, on one thread.
    check(::connect(connected, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
    accepted = ::accept(listener, nullptr, nullptr);
    check(accepted >= 0, "accept");
    ::close(listener);
    int one = 1;
    for (int fd : {connected, accepted}) {
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      if (!congestion.empty())
        check(::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion.data(),
                           static_cast<socklen_t>(congestion.size())) == 0,
              ("congestion control " + congestion).c_str());
    }
  }
  connection(connection const&) = delete;
  connection& operator=(connection const&) = delete;
  ~connection() {
    ::close(connected);
    ::close(accepted);
  }
};

/// Sends `total` bytes in writes of up to `chunk`, then half-closes.
inline void pump(int fd, std::size_t total, std::size_t chunk) {
  std::vector<char> buf(chunk, 'x');
  for (std::size_t sent = 0; sent < total;) {
    ssize_t n = ::send(fd, buf.data(), std::min(chunk, total - sent), 0);
    check(n > 0, "send");
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
}

/// Receives until `total` bytes or the end of the stream.
inline void drain(int fd, std::size_t total, std::size_t chunk) {
  std::vector<char> buf(chunk);
  for (std::size_t got = 0; got < total;) {
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
}

/// GB/s of payload per connection through `conns` connections at once, each carrying `total`
/// bytes one way: `total` over the time until the last byte of the slowest one arrived. Even
/// connections send from the connecting end, odd ones from the accepting end, so that two
/// connections are the two directions between the same two endpoints, as between two ranks:
/// `conns` 1 is one way, 2 is duplex (GB/s per direction with both directions busy).
inline double throughput(int conns, std::size_t total, std::size_t chunk,
                         std::string const& congestion = {}) {
  std::deque<connection> c;  // connections do not move: a deque builds them in place
  for (int i = 0; i < conns; ++i) c.emplace_back(congestion);
  std::barrier start(2 * conns);  // every sender and receiver starts at once
  std::vector<double> seconds(c.size());
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool const back = i % 2 == 1;
      int const from = back ? c[i].accepted : c[i].connected;
      int const to = back ? c[i].connected : c[i].accepted;
      threads.emplace_back([&, from] {
        start.arrive_and_wait();
        pump(from, total, chunk);
      });
      threads.emplace_back([&, i, to] {
        start.arrive_and_wait();
        auto t0 = clock::now();
        drain(to, total, chunk);
        seconds[i] = seconds_since(t0);
      });
    }
  }  // joins
  double const slowest = *std::max_element(seconds.begin(), seconds.end());
  return static_cast<double>(total) / slowest / 1e9;
}

}  // namespace bench::loopback
