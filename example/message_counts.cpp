// message_counts: runs every all_reduce algorithm once under gcl::counting and prints what it
// sent, beside the closed-form formula of doc/algorithms.md for each number. This is the
// distributed-training table of doc/homework.md (all-to-all n(n-1) messages of p, parameter
// server 2n of p, ring 2n(n-1) of p/n), measured.
//
//     message_counts --world-size 4 --count 1000000   (-p 4 for short)
//
// Exits with status 1 (and prints MISMATCH) if any measured number differs from its formula.

#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/halving_doubling.hpp>
#include <gcl/algorithm/parameter_server.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/spawn.hpp>
#include <gcl/stats.hpp>
#include <gcl/transport/inproc.hpp>

#include "common/cli.hpp"

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using u64 = std::uint64_t;

// What the formulas say: messages, smallest and largest message (elements), elements on the
// wire, rounds, each with the formula as text.
struct expected {
  std::string messages_formula;
  u64 messages;
  std::string size_formula;
  u64 min_size, max_size;
  u64 elements;
  std::string rounds_formula;
  int rounds;
};

// Measured: runs the algorithm on `ranks` threads and adds up every rank's counts.
// Rank r contributes r + 1 to each element; `data_ranks` ranks hold data (all but a
// dedicated server), so every element must end as data_ranks (data_ranks + 1) / 2.
template <class Alg>
gcl::transport_stats measure(int ranks, std::size_t count, Alg alg, int data_ranks = 0) {
  if (data_ranks == 0) data_ranks = ranks;
  auto per_rank = gcl::spawn<gcl::counting<gcl::inproc_transport>>(ranks, [&](auto& comm) {
    std::vector<float> v(count, static_cast<float>(comm.rank() + 1));
    gcl::all_reduce(comm, v, gcl::sum{}, alg);
    for (float x : v)
      if (x != static_cast<float>(data_ranks * (data_ranks + 1) / 2))
        throw std::runtime_error("wrong all_reduce result");
    return comm.transport().stats();
  });
  gcl::transport_stats total;
  for (auto const& s : per_rank) total += s;
  return total;
}

int floor_log2(int p) {
  int l = 0;
  while ((2 << l) <= p) ++l;
  return l;
}

std::string range(u64 lo, u64 hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
}

bool report(char const* name, int ranks, gcl::transport_stats const& s, expected const& e,
            std::size_t element_size) {
  u64 const min_el = s.messages_sent ? s.min_message_bytes / element_size : 0;
  u64 const max_el = s.messages_sent ? s.max_message_bytes / element_size : 0;
  bool const ok = s.messages_sent == e.messages && min_el == e.min_size && max_el == e.max_size &&
                  s.bytes_sent == e.elements * element_size && s.rounds == e.rounds;
  std::printf("%-28s %5d %9llu  %-22s %-15s %-24s %12llu  %6d  %-24s %s\n", name, ranks,
              static_cast<unsigned long long>(s.messages_sent),
              (e.messages_formula + " = " + std::to_string(e.messages)).c_str(),
              range(min_el, max_el).c_str(),
              (e.size_formula + " = " + range(e.min_size, e.max_size)).c_str(),
              static_cast<unsigned long long>(s.bytes_sent), s.rounds,
              (e.rounds_formula + " = " + std::to_string(e.rounds)).c_str(),
              ok ? "ok" : "MISMATCH");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Runs each all_reduce algorithm once under gcl::counting and prints its messages, "
      "message sizes, bytes and rounds beside the closed-form formulas"};
  gcl_cli::setup(app, "message_counts");
  int n = 4;
  std::size_t p = 1000000;
  app.add_option("-p,--world-size", n, "number of ranks P (threads)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--count", p, "elements per rank (float32)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 26))
      ->capture_default_str();
  GCL_CLI_PARSE(app, argc, argv);
  if (auto why = gcl_cli::refuse_launcher(); !why.empty()) return gcl_cli::usage_error(app, why);

  u64 const P = static_cast<u64>(n);
  constexpr std::size_t es = sizeof(float);
  std::printf(
      "all_reduce of p = %zu float32 per rank on P = %d ranks (threads), counted by "
      "gcl::counting<gcl::inproc_transport>\n\n",
      p, n);
  std::printf("%-28s %5s %9s  %-22s %-15s %-24s %12s  %6s  %-24s %s\n", "algorithm", "ranks",
              "messages", "formula", "size (elem)", "formula", "bytes sent", "rounds", "formula",
              "check");
  bool ok = true;
  bool const many = n > 1;

  ok &= report(
      "direct (all-to-all)", n, measure(n, p, gcl::direct{}),
      {"P(P-1)", P * (P - 1), "p", many ? p : 0, many ? p : 0, P * (P - 1) * p, "1", many ? 1 : 0},
      es);
  ok &= report(
      "parameter_server (rank 0)", n, measure(n, p, gcl::parameter_server{}),
      {"2(P-1)", 2 * (P - 1), "p", many ? p : 0, many ? p : 0, 2 * (P - 1) * p, "2", many ? 2 : 0},
      es);
  // The table's parameter server: n workers plus a dedicated server rank, n + 1 ranks in all.
  ok &= report("parameter_server (dedicated)", n + 1,
               measure(n + 1, p, gcl::parameter_server{.dedicated_server = true}, n),
               {"2n, n=P workers", 2 * P, "p", p, p, 2 * P * p, "2", 2}, es);
  ok &= report("tree (binomial)", n, measure(n, p, gcl::tree{}),
               {"2(P-1)", 2 * (P - 1), "p", many ? p : 0, many ? p : 0, 2 * (P - 1) * p,
                "2 floor(log2 P)", 2 * floor_log2(n)},
               es);
  ok &= report("ring", n, measure(n, p, gcl::ring{}),
               {"2P(P-1)", 2 * P * (P - 1), "p/P", many ? p / P : 0, many ? (p + P - 1) / P : 0,
                2 * (P - 1) * p, "2(P-1)", 2 * (n - 1)},
               es);
  {
    // The pipelined ring: each chunk of c elements travels as max(1, ceil(c / s)) segments.
    constexpr std::size_t seg_bytes = 1 << 16;
    u64 const s = seg_bytes / es, big = many ? (p + P - 1) / P : 0, small = many ? p / P : 0;
    u64 segments = 0, lo = many ? ~u64{0} : 0;
    for (u64 c = 0; c < P && many; ++c) {
      u64 const len = p / P + (c < p % P ? 1 : 0);
      segments += std::max<u64>(1, (len + s - 1) / s);
      lo = std::min(lo, len <= s ? len : (len % s == 0 ? s : len % s));  // smallest segment
    }
    bool const whole = big <= s;  // segments only when a chunk exceeds one segment
    (void)small;
    ok &= report("ring{.segment_bytes=64KiB}", n,
                 measure(n, p, gcl::ring{.segment_bytes = seg_bytes}),
                 {"2(P-1)sum_c ceil(c/s)", whole ? 2 * P * (P - 1) : 2 * (P - 1) * segments,
                  "<= s=16384", lo, whole ? big : s, 2 * (P - 1) * p, "2(P-1)", 2 * (n - 1)},
                 es);
  }
  {
    u64 const q = u64{1} << floor_log2(n), r = P - q, l = static_cast<u64>(floor_log2(n));
    int const rd_rounds = static_cast<int>(l) + (r == 0 ? 0 : r > q / 2 ? 2 : 1);
    ok &= report("recursive_doubling", n, measure(n, p, gcl::recursive_doubling{}),
                 {r ? "P'log2P'+2r" : "P log2 P", q * l + 2 * r, "p", many ? p : 0, many ? p : 0,
                  (q * l + 2 * r) * p, r ? "log2P'+1 or +2" : "log2 P", rd_rounds},
                 es);
    u64 const half = (q / 2) * (p / q) + std::min<u64>(q / 2, p % q);
    ok &= report("halving_doubling", n, measure(n, p, gcl::halving_doubling{}),
                 {r ? "2P'log2P'+2r" : "2P log2 P", 2 * q * l + 2 * r, "p/P'..p/2",
                  many ? p / q : 0, many ? (r ? p : half) : 0, (2 * (q - 1) + 2 * r) * p,
                  r ? "2log2P'+2" : "2 log2 P", static_cast<int>(2 * l + (r ? 2 : 0))},
                 es);
  }
  std::printf("\nP' = largest power of two <= P, r = P - P' (ranks folded in pairs first).\n");
  if (!ok) {
    std::printf("MISMATCH: a measured number differs from its formula\n");
    return 1;
  }
  std::printf("all measured counts equal the formulas\n");
}
