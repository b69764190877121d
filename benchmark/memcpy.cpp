// The machine's limits that the collectives are measured against:
//  - memory bandwidth: a STREAM-like copy (memcpy of a buffer much larger than the caches) with
//    1..T threads, each copying its own buffers, reported as GB/s of bytes copied (read+write
//    traffic is twice that, as in STREAM's "Copy" column, which counts both: we print both);
//  - loopback TCP throughput: one sender thread, one receiver thread, over 127.0.0.1.
//
//   benchmark/machine_limits --bytes 64M --threads 2 --tcp-bytes 1G

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

// Median GB/s (bytes copied per second, summed over threads) of `reps` timed rounds.
double copy_bandwidth(std::size_t bytes, int threads, int reps) {
  std::vector<std::vector<char>> src(threads), dst(threads);
  for (int t = 0; t < threads; ++t) {
    src[t].assign(bytes, static_cast<char>(t + 1));  // touch every page before timing
    dst[t].assign(bytes, 0);
  }
  std::vector<double> rates;
  std::barrier sync(threads);
  std::vector<double> seconds(threads);
  for (int rep = 0; rep < reps + 1; ++rep) {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        sync.arrive_and_wait();
        auto t0 = bench::clock::now();
        std::memcpy(dst[t].data(), src[t].data(), bytes);
        seconds[t] = bench::seconds_since(t0);
      });
    pool.clear();
    double slowest = *std::max_element(seconds.begin(), seconds.end());
    if (rep > 0)
      rates.push_back(static_cast<double>(bytes) * threads / slowest / 1e9);  // rep 0 warms up
  }
  return bench::median(rates);
}

void check(bool ok, char const* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

// GB/s of payload through one loopback TCP connection.
double tcp_bandwidth(std::size_t total, std::size_t chunk) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  check(listener >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
  socklen_t len = sizeof addr;
  check(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
  check(::listen(listener, 1) == 0, "listen");
  double seconds = 0;
  std::jthread receiver([&] {
    int s = ::accept(listener, nullptr, nullptr);
    std::vector<char> buf(chunk);
    std::size_t got = 0;
    while (got < total) {
      ssize_t n = ::recv(s, buf.data(), buf.size(), 0);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ::close(s);
  });
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  check(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
  int one = 1;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<char> buf(chunk, 'x');
  auto t0 = bench::clock::now();
  std::size_t sent = 0;
  while (sent < total) {
    ssize_t n = ::send(s, buf.data(), std::min(chunk, total - sent), 0);
    check(n > 0, "send");
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(s, SHUT_WR);
  receiver.join();
  seconds = bench::seconds_since(t0);
  ::close(s);
  ::close(listener);
  return static_cast<double>(total) / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Machine limits: memcpy bandwidth per thread count, loopback TCP throughput"};
  std::string bytes = "256M", tcp_bytes = "2G";
  int threads = 2, reps = 5;
  bool csv = false;
  app.add_option("--bytes", bytes, "buffer per thread for the copy test")->capture_default_str();
  app.add_option("--threads", threads, "copy with 1..this many threads")->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions (median reported)")->capture_default_str();
  app.add_option("--tcp-bytes", tcp_bytes, "bytes pushed through loopback TCP (0: skip)")
      ->capture_default_str();
  app.add_flag("--csv", csv, "print CSV");
  CLI11_PARSE(app, argc, argv);
  try {
    std::size_t b = bench::parse_size(bytes), tb = bench::parse_size(tcp_bytes);
    if (csv)
      std::printf("test,threads,bytes,GBps_copied,GBps_traffic\n");
    else
      std::printf("# %-22s %7s %10s %14s %16s\n", "test", "threads", "bytes", "copied (GB/s)",
                  "traffic (GB/s)");
    for (int t = 1; t <= threads; ++t) {
      double r = copy_bandwidth(b, t, reps);
      if (csv)
        std::printf("memcpy,%d,%zu,%.3f,%.3f\n", t, b, r, 2 * r);
      else
        std::printf("  %-22s %7d %10s %14.2f %16.2f\n", "memcpy", t, bench::format_size(b).c_str(),
                    r, 2 * r);
      std::fflush(stdout);
    }
    if (tb > 0) {
      std::vector<double> rates;
      for (int i = 0; i < 3; ++i) rates.push_back(tcp_bandwidth(tb, 1 << 20));
      double r = bench::median(rates);
      if (csv)
        std::printf("tcp_loopback,1,%zu,%.3f,%.3f\n", tb, r, r);
      else
        std::printf("  %-22s %7d %10s %14.2f %16s\n", "tcp loopback (1 conn)", 1,
                    bench::format_size(tb).c_str(), r, "-");
    }
  } catch (std::exception const& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
