#pragma once
/// \file
/// What every benchmark program shares, gcl's and the peers' alike: the command line, the size
/// sweep, the nccl-tests columns and bus-bandwidth factors, the integer-valued data patterns and
/// their exact expected results, the timed loop, and the table/CSV/JSON printer. Nothing here
/// knows gcl, so the peers (Open MPI, Gloo) time and format their rows with the very same code.
///
///     bench::options o;
///     CLI::App app{"all_reduce sweep"};
///     bench::add_common_options(app, o);
///     CLI11_PARSE(app, argc, argv);
///     bench::printer out(o, bench::collective::all_reduce, world_size, "gcl inproc ring");

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

/// The collectives the sweeps measure.
enum class collective { all_reduce, broadcast, reduce_scatter, all_gather, all_to_all };

inline std::string_view name_of(collective c) {
  switch (c) {
    case collective::all_reduce:
      return "all_reduce";
    case collective::broadcast:
      return "broadcast";
    case collective::reduce_scatter:
      return "reduce_scatter";
    case collective::all_gather:
      return "all_gather";
    case collective::all_to_all:
      return "all_to_all";
  }
  return "?";
}

/// Whether the collective reduces (has a meaningful --op).
constexpr bool reduces(collective c) {
  return c == collective::all_reduce || c == collective::reduce_scatter;
}

/// Whether each rank's buffer is made of P equal blocks (the size is then a multiple of P).
inline bool blocked(collective c) {
  return c == collective::reduce_scatter || c == collective::all_gather ||
         c == collective::all_to_all;
}

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor, so that busbw is comparable with
/// the link bandwidth whatever the collective (see nccl-tests doc/PERFORMANCE.md).
inline double bus_factor(collective c, int n) {
  double p = n;
  switch (c) {
    case collective::all_reduce:
      return n > 1 ? 2.0 * (p - 1) / p : 0.0;
    case collective::broadcast:
      return 1.0;
    case collective::reduce_scatter:
    case collective::all_gather:
    case collective::all_to_all:
      return (p - 1) / p;
  }
  return 1.0;
}

/// "8", "64K", "64M", "1G", "1.5M" (binary multiples) -> bytes. The command lines read sizes
/// with CLI11's CLI::AsSizeValue; this is for sizes that come from elsewhere.
inline std::uint64_t parse_size(std::string const& text) {
  if (text.empty()) throw std::invalid_argument("empty size");
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (std::exception const&) {
    throw std::invalid_argument("not a size: '" + text + "' (examples: 8, 64K, 64M, 1G)");
  }
  std::string unit = text.substr(used);
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "k" || unit == "KB" || unit == "KiB")
    mult = 1024.0;
  else if (unit == "M" || unit == "m" || unit == "MB" || unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "g" || unit == "GB" || unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else
    throw std::invalid_argument("unknown size suffix in '" + text + "' (use K, M or G)");
  if (v < 0) throw std::invalid_argument("negative size: '" + text + "'");
  return static_cast<std::uint64_t>(std::llround(v * mult));
}

/// "64M", "8K", "12": the shortest exact binary spelling, for tables.
inline std::string format_size(std::uint64_t b) {
  if (b >= (1u << 30) && b % (1u << 30) == 0) return std::to_string(b >> 30) + "G";
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= (1u << 10) && b % (1u << 10) == 0) return std::to_string(b >> 10) + "K";
  return std::to_string(b);
}

enum class format { table, csv, json };

/// The options every sweep accepts. gcl's programs add --transport, --algorithm, --world-size.
struct options {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = std::uint64_t{64} << 20;
  double factor = 2.0;
  int iters = 500;           ///< most timed calls per size
  double max_seconds = 1.0;  ///< ... fewer when they would take longer than this (0: no bound)
  int warmup = 5;
  bool barrier = false;  ///< a barrier before every timed call (default: back to back)
  double uneven_us = 0;  ///< before each timed call, the last rank works this long (time_calls)
  std::string dtype = "float";
  std::string op = "sum";
  int root = 0;
  bool csv = false;
  bool json = false;
  bool check = true;
  bool inject_wrong = false;  ///< spoil one checked element (proves the check can fail)
  std::string label;  ///< free text put in every CSV/JSON row (e.g. "gcl inproc" or "mpi vader")

  format fmt() const { return json ? format::json : csv ? format::csv : format::table; }
};

/// Registers the shared options on `app`: nccl-tests' letters (-b -e -f -n -w -c -d -o -r), and
/// the same meaning for every letter in every gcl program (doc/cli.md).
inline void add_common_options(CLI::App& app, options& o) {
  app.add_option("-b,--min-bytes", o.min_bytes,
                 "smallest message, bytes (suffixes K, M, G: powers of 1024)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("-e,--max-bytes", o.max_bytes,
                 "largest message, bytes (suffixes K, M, G: powers of 1024)")
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("-f,--factor", o.factor, "size multiplier between rows (> 1)")
      ->check(CLI::Range(1.0001, 1e6))
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters,
                 "most timed calls per size (median reported; fewer if --max-seconds says so)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--max-seconds", o.max_seconds,
                 "per size, time only as many calls as fit in about this long, judged from the "
                 "warm-up calls (at least min(5, --iters); 0: always --iters)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  auto* barrier = app.add_flag("--barrier", o.barrier,
                               "a barrier before every timed call, each timed alone (default: "
                               "back to back after one barrier, as a training loop calls them)");
  app.add_option("--uneven-us", o.uneven_us,
                 "back to back, the last rank works (polls the clock) this many microseconds "
                 "before each timed call, as in a training step whose ranks finish their work "
                 "at different times; the times are what a call adds beyond that work")
      ->check(CLI::Range(0.0, 1e6))
      ->excludes(barrier)
      ->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "untimed iterations per size")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("-d,--dtype", o.dtype, "element type")
      ->check(CLI::IsMember({"float", "double", "int32", "int64"}))
      ->capture_default_str();
  app.add_option("-o,--op", o.op, "reduction operator (all_reduce, reduce_scatter)")
      ->check(CLI::IsMember({"sum", "prod", "min", "max"}))
      ->capture_default_str();
  app.add_option("-r,--root", o.root, "root rank (broadcast)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  auto* csv = app.add_flag("--csv", o.csv, "print CSV (RFC 4180) instead of a table");
  app.add_flag("--json", o.json, "print JSON (one object per run, rows in an array)")
      ->excludes(csv);
  app.add_option("-c,--check", o.check, "check the result once per size: 1 (default) or 0")
      ->check(CLI::IsMember({"0", "1"}));
  app.add_flag("!--no-check", o.check, "skip the once-per-size result check (= -c 0)");
  app.add_flag("--inject-wrong", o.inject_wrong,
               "rank 0 spoils one result element before the check")
      ->group("");  // hidden: for the test that the check can fail
  app.add_option("--label", o.label, "free text copied into every CSV/JSON row");
}

/// Checks what the options say together, before any work: "" or the error (one line).
inline std::string check_options(options const& o) {
  if (o.min_bytes > o.max_bytes)
    return "--min-bytes " + std::to_string(o.min_bytes) + " is larger than --max-bytes " +
           std::to_string(o.max_bytes);
  return {};
}

/// One CSV field, quoted when it must be (RFC 4180): a comma, a quote, CR or LF inside, or
/// spaces at either end; quotes inside are doubled.
inline std::string csv_field(std::string_view v) {
  bool const quote = v.find_first_of(",\"\r\n") != std::string_view::npos ||
                     (!v.empty() && (v.front() == ' ' || v.back() == ' '));
  if (!quote) return std::string(v);
  std::string out = "\"";
  for (char c : v) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

inline std::size_t dtype_size(std::string_view t) {
  if (t == "float" || t == "int32") return 4;
  return 8;
}

/// The element counts of the sweep: per-rank buffer sizes min, min*f, ... <= max. For blocked
/// collectives the count is rounded down to a multiple of P (at least P); repeats are dropped.
inline std::vector<std::uint64_t> sweep_counts(options const& o, collective c, int world) {
  std::uint64_t lo = o.min_bytes, hi = o.max_bytes;
  if (lo > hi) throw std::invalid_argument("--min-bytes is larger than --max-bytes");
  std::size_t es = dtype_size(o.dtype);
  std::uint64_t unit = blocked(c) ? static_cast<std::uint64_t>(world) : 1;
  std::vector<std::uint64_t> counts;
  double b = static_cast<double>(std::max<std::uint64_t>(lo, 1));
  if (lo == 0) counts.push_back(0);
  for (; b <= static_cast<double>(hi) * (1 + 1e-9); b *= o.factor) {
    std::uint64_t n = static_cast<std::uint64_t>(b) / es;
    n = std::max(unit, n / unit * unit);
    if (n * es > hi && !counts.empty()) break;
    if (counts.empty() || counts.back() != n) counts.push_back(n);
  }
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Data patterns. Small integers, so that every reduction of every type is exact and a result
// can be compared with ==. Sums stay below 8 P, products are powers of two.

/// Value of element `i` of rank `r`'s input for a reducing collective with operator `op`.
inline std::int64_t pattern(std::string_view op, int r, std::uint64_t i) {
  if (op == "prod") return static_cast<std::int64_t>((static_cast<std::uint64_t>(r) + i) % 2 + 1);
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(r) * 3 + i) % 8 + 1);
}

/// Value that rank `src` sends to rank `dst` at position `k` of the block in an all_to_all.
inline std::int64_t a2a_pattern(int src, int dst, std::uint64_t k) {
  return static_cast<std::int64_t>((static_cast<std::uint64_t>(src) * 7 + dst * 3 + k) % 64 + 1);
}

inline std::int64_t fold(std::string_view op, std::int64_t a, std::int64_t b) {
  if (op == "sum") return a + b;
  if (op == "prod") return a * b;
  if (op == "min") return std::min(a, b);
  return std::max(a, b);
}

/// The reduction of `pattern(op, r, i)` over ranks r = 0..P-1.
inline std::int64_t reduced(std::string_view op, int world, std::uint64_t i) {
  std::int64_t acc = pattern(op, 0, i);
  for (int r = 1; r < world; ++r) acc = fold(op, acc, pattern(op, r, i));
  return acc;
}

/// Fills a rank's input buffer(s) for the result check. `count` is the per-rank count (the
/// size column divided by the element size); `in` has the input layout of the collective.
template <class T>
void fill_check_input(collective c, std::string_view op, int rank, int world, int root,
                      std::span<T> in) {
  std::uint64_t n = in.size();
  switch (c) {
    case collective::all_reduce:
    case collective::reduce_scatter:
    case collective::all_gather:
      for (std::uint64_t i = 0; i < n; ++i) in[i] = static_cast<T>(pattern(op, rank, i));
      break;
    case collective::broadcast:
      for (std::uint64_t i = 0; i < n; ++i)
        in[i] = rank == root ? static_cast<T>(pattern(op, root, i)) : T(-1);
      break;
    case collective::all_to_all: {
      std::uint64_t blk = n / static_cast<std::uint64_t>(world);
      for (int d = 0; d < world; ++d)
        for (std::uint64_t k = 0; k < blk; ++k)
          in[d * blk + k] = static_cast<T>(a2a_pattern(rank, d, k));
      break;
    }
  }
}

/// The number of elements of `out` (the collective's output on `rank`) that differ from the
/// exact expected result. With `inject`, the first element counts as wrong (tests the check).
template <class T>
std::uint64_t count_wrong(collective c, std::string_view op, int rank, int world, int root,
                          std::span<T const> out, bool inject = false) {
  std::uint64_t n = out.size(), wrong = inject && n > 0 ? 1 : 0;
  switch (c) {
    case collective::all_reduce:
      for (std::uint64_t i = 0; i < n; ++i)
        wrong += out[i] != static_cast<T>(reduced(op, world, i));
      break;
    case collective::broadcast:
      for (std::uint64_t i = 0; i < n; ++i) wrong += out[i] != static_cast<T>(pattern(op, root, i));
      break;
    case collective::reduce_scatter: {
      std::uint64_t base = static_cast<std::uint64_t>(rank) * n;
      for (std::uint64_t k = 0; k < n; ++k)
        wrong += out[k] != static_cast<T>(reduced(op, world, base + k));
      break;
    }
    case collective::all_gather: {
      std::uint64_t blk = n / static_cast<std::uint64_t>(world);
      for (int s = 0; s < world; ++s)
        for (std::uint64_t k = 0; k < blk; ++k)
          wrong += out[s * blk + k] != static_cast<T>(pattern(op, s, k));
      break;
    }
    case collective::all_to_all: {
      std::uint64_t blk = n / static_cast<std::uint64_t>(world);
      for (int s = 0; s < world; ++s)
        for (std::uint64_t k = 0; k < blk; ++k)
          wrong += out[s * blk + k] != static_cast<T>(a2a_pattern(s, rank, k));
      break;
    }
  }
  return wrong;
}

/// One rank's buffers for the per-rank element count `n` (the size column / element size), in
/// the layout of the collective: `in` only (in place) for all_reduce and broadcast, `in` and
/// `out` for the others, with P blocks of n / P on the blocked side(s). They live in what
/// `make(count)` returns (anything with data(): a std::vector by default; gcl's programs take
/// memory from their transport's pool with --pool).
template <class T, class Storage = std::vector<T>>
struct buffers {
  collective kind;
  Storage in_store, out_store;
  std::span<T> in, out;
  template <class Make = Storage (*)(std::size_t)>
  buffers(collective c, std::uint64_t n, int world, Make make = &zeros) : kind(c) {
    std::uint64_t const blk = n / static_cast<std::uint64_t>(world);
    std::uint64_t in_n = n, out_n = 0;
    switch (c) {
      case collective::all_reduce:
      case collective::broadcast:
        break;
      case collective::reduce_scatter:
        out_n = blk;
        break;
      case collective::all_gather:
        in_n = blk;
        out_n = n;
        break;
      case collective::all_to_all:
        out_n = n;
        break;
    }
    in_store = make(static_cast<std::size_t>(in_n));
    out_store = make(static_cast<std::size_t>(out_n));
    in = {in_store.data(), static_cast<std::size_t>(in_n)};
    out = {out_store.data(), static_cast<std::size_t>(out_n)};
  }
  /// Where the collective's result is.
  std::span<T const> result() const {
    if (kind == collective::all_reduce || kind == collective::broadcast) return in;
    return out;
  }

 private:
  static Storage zeros(std::size_t count) { return Storage(count); }
};

/// Input for the timed iterations: values that repeated in-place reductions leave unchanged
/// (0 for sum, 1 otherwise), so 1000 iterations never overflow or reach inf/NaN.
template <class T>
void fill_timed_input(std::string_view op, std::span<T> in) {
  std::fill(in.begin(), in.end(), op == "sum" ? T(0) : T(1));
}

// ---------------------------------------------------------------------------------------------
// Timing.

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

/// Median of `v` (mean of the middle two for an even count); NaN for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/// Element-wise maximum: `into[i] = max(into[i], other[i])` (the slowest rank per iteration).
inline void max_into(std::vector<double>& into, std::span<double const> other) {
  for (std::size_t i = 0; i < into.size() && i < other.size(); ++i)
    into[i] = std::max(into[i], other[i]);
}

/// The median time of `calls` untimed warm-up calls on this rank, in seconds (NaN for none):
/// the estimate from which rank 0 decides how many calls to time (`timed_calls`).
template <class Call>
double warm_up(int calls, Call&& call) {
  std::vector<double> d;
  d.reserve(static_cast<std::size_t>(std::max(calls, 0)));
  for (int i = 0; i < calls; ++i) {
    auto t0 = clock::now();
    call();
    d.push_back(seconds_since(t0));
  }
  return median(std::move(d));
}

/// How many calls to time for one size: `--iters`, or fewer when they would take longer than
/// `--max-seconds` at `per_call` seconds each, but at least min(5, --iters) so that a median
/// means something. Only rank 0 decides (from its own warm-up): every rank must make the same
/// number of calls, so the caller sends rank 0's answer to the others.
inline int timed_calls(options const& o, double per_call) {
  if (o.max_seconds <= 0 || !(per_call > 0)) return o.iters;
  int const least = std::min(o.iters, 5);
  double const fit = std::floor(o.max_seconds / per_call);
  return static_cast<int>(
      std::clamp(fit, static_cast<double>(least), static_cast<double>(o.iters)));
}

/// One rank's timed loop: the duration of each call in seconds, then their sum, in one vector,
/// so that the ranks combine theirs with a single element-wise maximum (MPI_MAX, max_into):
/// that gives, per call, the slowest rank's duration and, last, the slowest rank's total.
using loop_record = std::vector<double>;

/// Times `calls` calls of `call` on this rank.
///
/// Back to back (the default): one `barrier()`, then the calls with nothing in between, a
/// timestamp after each; call i lasted t_i - t_{i-1}, t_0 being the end of the barrier. This
/// is how a training loop calls a collective, so the time includes what one call leaves to the
/// next (a rank that returns early starts the next call early; work still in flight delays
/// it). nccl-tests too times its calls back to back (and reports their mean).
///
/// `--barrier`: a barrier before every call and each call timed alone, so that every call
/// starts from quiet links with the ranks nearly in step: the latency of an isolated call.
///
/// `--uneven-us` (back to back): before each call the last rank works (polls the clock) for that
/// long, and every rank's durations are its periods less that work: what a call adds to a
/// training step in which one rank finishes its work that much after the others. The others
/// wait inside the call meanwhile: where a transport sleeps while it waits, each call costs a
/// wake-up, which back-to-back calls of ranks in step never show.
template <class Barrier, class Call>
loop_record time_calls(options const& o, int rank, int world, int calls, Barrier&& barrier,
                       Call&& call) {
  auto const n = static_cast<std::size_t>(calls);
  loop_record r(n + 1);
  if (o.barrier) {
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      barrier();
      auto t0 = clock::now();
      call();
      r[i] = seconds_since(t0);
      total += r[i];
    }
    r[n] = total;
    return r;
  }
  // Timestamps only, in memory written before the loop: no arithmetic between the calls.
  std::vector<clock::time_point> t(n + 1);
  auto const work = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double, std::micro>(o.uneven_us));
  bool const works = world > 1 && rank == world - 1 && work.count() > 0;
  barrier();
  t[0] = clock::now();
  for (std::size_t i = 1; i <= n; ++i) {
    if (works)
      for (auto const until = t[i - 1] + work; clock::now() < until;) {
      }
    call();
    t[i] = clock::now();
  }
  double const worked = std::chrono::duration<double>(work).count();
  for (std::size_t i = 0; i < n; ++i)
    r[i] = std::chrono::duration<double>(t[i + 1] - t[i]).count() - worked;
  r[n] = std::chrono::duration<double>(t[n] - t[0]).count() - worked * static_cast<double>(n);
  return r;
}

/// "b2b" (back to back), "uneven" (back to back, --uneven-us) or "barrier": the `mode` column.
inline char const* mode_name(options const& o) {
  return o.barrier ? "barrier" : o.uneven_us > 0 ? "uneven" : "b2b";
}

// ---------------------------------------------------------------------------------------------
// Output.

/// One line of results, in nccl-tests' columns plus the cost model's prediction.
struct row {
  std::uint64_t bytes = 0;  ///< size column: the collective's total buffer, as nccl-tests
  std::uint64_t count = 0;  ///< bytes / element size
  double time_us = 0;       ///< median over calls of the slowest rank's time
  double mean_us = 0;       ///< the slowest rank's total time in calls / calls (nccl-tests')
  int iters = 0;            ///< timed calls
  double algbw = 0;         ///< GB/s: bytes / time
  double busbw = 0;         ///< GB/s: algbw * bus_factor
  std::uint64_t wrong = 0;  ///< elements that differ from the exact result, over all ranks
  double pred_us = std::numeric_limits<double>::quiet_NaN();  ///< cost model, if any
  bool checked = true;
};

/// Prints the header, rows and trailer of one sweep in the chosen format, to stdout.
class printer {
 public:
  printer(options const& o, collective c, int world, std::string impl, std::string algorithm)
      : o_(o), c_(c), world_(world), impl_(std::move(impl)), alg_(std::move(algorithm)) {}

  /// Builds a row from the slowest rank's timed loop (the element-wise maximum of every rank's
  /// `time_calls` record).
  row make_row(std::uint64_t count, loop_record const& slowest, std::uint64_t wrong) const {
    row r;
    r.count = count;
    r.bytes = count * dtype_size(o_.dtype);
    r.iters = slowest.empty() ? 0 : static_cast<int>(slowest.size() - 1);
    r.time_us = median(std::vector<double>(slowest.begin(), slowest.begin() + r.iters)) * 1e6;
    r.mean_us = r.iters ? slowest.back() / r.iters * 1e6 : 0;
    r.algbw = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0;
    r.busbw = r.algbw * bus_factor(c_, world_);
    r.wrong = wrong;
    r.checked = o_.check;
    return r;
  }

  void begin() {
    switch (o_.fmt()) {
      case format::table:
        std::printf(
            "# %s: %s, algorithm %s, %d ranks, %s, op %s, %d warmup + up to %d timed calls "
            "(about %g s)\n",
            std::string(name_of(c_)).c_str(), impl_.c_str(), alg_.c_str(), world_, o_.dtype.c_str(),
            reduces(c_) ? o_.op.c_str() : "none", o_.warmup, o_.iters, o_.max_seconds);
        if (o_.barrier)
          std::printf("# mode %s: a barrier before every call, each call timed alone\n",
                      mode_name(o_));
        else if (o_.uneven_us > 0)
          std::printf(
              "# mode %s: one barrier, then the calls back to back, the last rank working %g us "
              "before each; times are what a call adds beyond that work\n",
              mode_name(o_), o_.uneven_us);
        else
          std::printf("# mode %s: one barrier, then the calls back to back\n", mode_name(o_));
        std::printf(
            "# time: median over calls of the slowest rank's; mean: slowest rank's total / calls; "
            "busbw = algbw * %.4g\n",
            bus_factor(c_, world_));
        std::printf("#\n");
        std::printf("# %10s %12s %7s %6s %5s %11s %8s %8s %7s %11s %11s %6s\n", "size", "count",
                    "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "pred", "mean",
                    "calls");
        std::printf("# %10s %12s %7s %6s %5s %11s %8s %8s %7s %11s %11s %6s\n", "(B)", "(elements)",
                    "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "");
        break;
      case format::csv:
        std::printf(
            "collective,impl,algorithm,label,ranks,size_B,count,type,redop,root,time_us,"
            "algbw_GBps,busbw_GBps,wrong,pred_us,mode,iters,mean_us\n");
        break;
      case format::json:
        // Written whole by end(): nlohmann::json does the quoting.
        json_ = {{"collective", std::string(name_of(c_))},
                 {"impl", impl_},
                 {"algorithm", alg_},
                 {"label", o_.label},
                 {"ranks", world_},
                 {"type", o_.dtype},
                 {"redop", redop()},
                 {"iters", o_.iters},
                 {"max_seconds", o_.max_seconds},
                 {"warmup", o_.warmup},
                 {"mode", mode_name(o_)},
                 {"rows", nlohmann::ordered_json::array()}};
        break;
    }
    std::fflush(stdout);
  }

  void print(row const& r) {
    std::string wrong = r.checked ? std::to_string(r.wrong) : "N/A";
    std::string root = c_ == collective::broadcast ? std::to_string(o_.root) : "-1";
    switch (o_.fmt()) {
      case format::table: {
        char pred[32] = "-";
        if (!std::isnan(r.pred_us)) std::snprintf(pred, sizeof pred, "%.2f", r.pred_us);
        std::printf("  %10llu %12llu %7s %6s %5s %11.2f %8.3f %8.3f %7s %11s %11.2f %6d\n",
                    static_cast<unsigned long long>(r.bytes),
                    static_cast<unsigned long long>(r.count), o_.dtype.c_str(), redop().c_str(),
                    root.c_str(), r.time_us, r.algbw, r.busbw, wrong.c_str(), pred, r.mean_us,
                    r.iters);
        break;
      }
      case format::csv:
        std::printf(
            "%s,%s,%s,%s,%d,%llu,%llu,%s,%s,%s,%.3f,%.6f,%.6f,%s,", csv_field(name_of(c_)).c_str(),
            csv_field(impl_).c_str(), csv_field(alg_).c_str(), csv_field(o_.label).c_str(), world_,
            static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count),
            csv_field(o_.dtype).c_str(), csv_field(redop()).c_str(), root.c_str(), r.time_us,
            r.algbw, r.busbw, wrong.c_str());
        if (!std::isnan(r.pred_us)) std::printf("%.3f", r.pred_us);
        std::printf(",%s,%d,%.3f\n", mode_name(o_), r.iters, r.mean_us);
        break;
      case format::json: {
        nlohmann::ordered_json row = {
            {"size", r.bytes},
            {"count", r.count},
            {"root", c_ == collective::broadcast ? o_.root : -1},
            {"time_us", r.time_us},
            {"algbw", r.algbw},
            {"busbw", r.busbw},
            {"wrong", r.checked ? nlohmann::ordered_json(r.wrong) : nlohmann::ordered_json()},
            {"mean_us", r.mean_us},
            {"iters", r.iters},
            {"pred_us",
             std::isnan(r.pred_us) ? nlohmann::ordered_json() : nlohmann::ordered_json(r.pred_us)}};
        json_["rows"].push_back(std::move(row));
        // The JSON is written whole at the end: until then a line per size on stderr says
        // how far the sweep is, and stdout stays one JSON document.
        std::string size = format_size(r.bytes);
        if (size.back() >= '0' && size.back() <= '9')
          size += " B";
        else
          size.insert(size.size() - 1, " ").append("iB");  // "64K" -> "64 KiB"
        std::fprintf(stderr, "%s (%s, %d ranks): %s done, %.2f us\n",
                     std::string(name_of(c_)).c_str(), alg_.c_str(), world_, size.c_str(),
                     r.time_us);
        std::fflush(stderr);
        break;
      }
    }
    ++rows_;
    total_wrong_ += r.wrong;
    std::fflush(stdout);
  }

  void end() {
    switch (o_.fmt()) {
      case format::table:
        std::printf("# Out of bounds values : %llu %s\n",
                    static_cast<unsigned long long>(total_wrong_), total_wrong_ ? "FAILED" : "OK");
        break;
      case format::csv:
        break;
      case format::json:
        json_["wrong"] = total_wrong_;
        std::printf("%s\n", json_.dump(1).c_str());
        break;
    }
    std::fflush(stdout);
  }

  std::uint64_t total_wrong() const { return total_wrong_; }

 private:
  std::string redop() const { return reduces(c_) ? o_.op : "none"; }
  options const& o_;
  collective c_;
  int world_;
  std::string impl_, alg_;
  int rows_ = 0;
  std::uint64_t total_wrong_ = 0;
  nlohmann::ordered_json json_;  ///< --json: the whole run, printed by end()
};

}  // namespace bench
