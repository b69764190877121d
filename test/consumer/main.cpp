// A program outside gcl, written only against the installed public headers: P = 1..9 ranks
// all-reduce random integers of every length 0..1000 and compare with the serial sum; then a
// rank that throws must make spawn rethrow its error and release the others, who sit in recv,
// with an abort naming it.
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

    // Ranks 0, 1 and 3 wait in recv with a 60 s timeout when rank 2 throws: spawn must rethrow
    // rank 2's error, and each of the others must have been released by the abort (errc::aborted
    // naming rank 2's error), not by its timeout. Who reported what, not how fast: load cannot
    // break it.
    std::string seen[4];  // each rank writes only its own slot
    try {
      gcl::spawn<gcl::inproc_transport>(
          4,
          [&](auto& comm) {
            if (comm.rank() == 2) throw std::runtime_error("rank 2 gives up");
            try {
              comm.template recv<int>((comm.rank() + 1) % comm.size());
            } catch (gcl::transport_error const& e) {
              seen[comm.rank()] = (e.code() == gcl::errc::aborted ? "aborted: " : "other: ") +
                                  std::string(e.what());
              throw;
            }
          },
          {.timeout = std::chrono::seconds{60}});
      std::printf("FAIL: spawn did not rethrow\n");
      return 1;
    } catch (std::runtime_error const& e) {
      std::printf("spawn rethrew \"%s\"\n", e.what());
      if (std::string(e.what()) != "rank 2 gives up") return 1;
    }
    for (int r : {0, 1, 3}) {
      std::printf("rank %d: %s\n", r, seen[r].c_str());
      if (seen[r].rfind("aborted: ", 0) != 0 ||
          seen[r].find("rank 2 failed: rank 2 gives up") == std::string::npos) {
        std::printf("FAIL: rank %d was not released by the abort naming rank 2\n", r);
        return 1;
      }
    }
    std::printf("consumer: OK (gcl %d)\n", gcl::version);
    return 0;
  } catch (std::exception const& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
}
