// A program outside gcl, written only against the installed public headers: P = 1..9 ranks
// all-reduce random integers of every length 0..1000 and compare with the serial sum; then a
// rank that throws must make spawn rethrow promptly while the others sit in recv.
#include <gcl/gcl.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<std::int64_t> data_of(int rank, int size, std::size_t n) {
  std::mt19937_64 gen(static_cast<std::uint64_t>(size) * 1000003u +
                      static_cast<std::uint64_t>(rank) * 1009u + n);
  std::uniform_int_distribution<std::int64_t> dist(-1000000, 1000000);
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Returns the number of (length, algorithm) cases this rank checked: tree and ring, 0..1000.
template <class Comm>
int check_all_lengths(Comm& comm) {
  int const p = comm.size();
  int checked = 0;
  for (std::size_t n = 0; n <= 1000; ++n) {
    std::vector<std::int64_t> expected(n, 0);
    for (int r = 0; r < p; ++r) {
      auto other = data_of(r, p, n);
      for (std::size_t i = 0; i < n; ++i) expected[i] += other[i];
    }
    auto check = [&](auto algorithm) {
      auto v = data_of(comm.rank(), p, n);
      gcl::all_reduce(comm, v, gcl::sum{}, algorithm);
      if (v != expected)
        throw std::runtime_error("rank " + std::to_string(comm.rank()) + " of " +
                                 std::to_string(p) + ": " + std::string(decltype(algorithm)::name) +
                                 " gave a wrong sum for length " + std::to_string(n));
      ++checked;
    };
    check(gcl::tree{});
    check(gcl::ring{});
  }
  return checked;
}

}  // namespace

int main() {
  try {
    for (int p = 1; p <= 9; ++p) {
      auto checked =
          gcl::spawn<gcl::inproc_transport>(p, [](auto& comm) { return check_all_lengths(comm); });
      std::printf("P=%d: %d cases per rank match the serial sum\n", p, checked.at(0));
    }

    std::chrono::steady_clock::time_point thrown;
    try {
      gcl::spawn<gcl::inproc_transport>(4, [&](auto& comm) {
        if (comm.rank() == 2) {
          thrown = std::chrono::steady_clock::now();
          throw std::runtime_error("rank 2 gives up");
        }
        comm.template recv<int>((comm.rank() + 1) % comm.size());
      });
      std::printf("FAIL: spawn did not rethrow\n");
      return 1;
    } catch (std::runtime_error const& e) {
      auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - thrown)
                    .count();
      std::printf("spawn rethrew \"%s\" %.1f ms after the throw\n", e.what(), ms);
      if (std::string(e.what()) != "rank 2 gives up" || ms > 1000) return 1;
    }
    std::printf("consumer: OK (gcl %d)\n", gcl::version);
    return 0;
  } catch (std::exception const& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
