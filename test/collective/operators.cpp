#define BOOST_TEST_MODULE collective_operators
// The operators that reach past a plain element-wise combine, through the collectives, over
// every transport: minloc and maxloc (ties go to the lowest index, whatever order an algorithm
// combines in) and avg (a sum, divided once by the number of ranks combined).
#include <gcl/algorithm/direct.hpp>
#include <gcl/algorithm/recursive_doubling.hpp>
#include <gcl/algorithm/ring.hpp>
#include <gcl/algorithm/tree.hpp>
#include <gcl/collective/all_reduce.hpp>
#include <gcl/collective/exscan.hpp>
#include <gcl/collective/reduce.hpp>
#include <gcl/collective/reduce_scatter.hpp>
#include <gcl/collective/reduce_scatterv.hpp>
#include <gcl/collective/scan.hpp>
#include <gcl/op.hpp>

#include "support.hpp"

namespace gcl {
template <class T, class I>
std::ostream& operator<<(std::ostream& s, value_index<T, I> const& v) {
  return s << "{" << v.value << ", " << v.index << "}";
}
}  // namespace gcl

using namespace gcl_test;

namespace {

// Few distinct values, so that most elements tie between several ranks.
int tie_value(int r, std::size_t i) {
  return static_cast<int>((static_cast<std::size_t>(r) * 3 + i) % 4);
}

// minloc (or maxloc) of every rank's {tie_value, rank}, with algorithm `alg`; the oracle scans
// the ranks in order and keeps the first strictly better value.
template <class T, class I, class Op, class Alg, class Comm>
std::string loc(Comm& comm, Op op, Alg alg, bool smaller) {
  int const p = comm.size();
  for (std::size_t n : lengths(p, 1001)) {
    std::vector<gcl::value_index<T, I>> v(n), want(n);
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = {static_cast<T>(tie_value(comm.rank(), i)), static_cast<I>(comm.rank())};
      want[i] = {static_cast<T>(tie_value(0, i)), 0};
      for (int r = 1; r < p; ++r) {
        T const x = static_cast<T>(tie_value(r, i));
        if (smaller ? x < want[i].value : want[i].value < x) want[i] = {x, static_cast<I>(r)};
      }
    }
    gcl::all_reduce(comm, v, op, alg);
    if (auto d = diff(v, want); !d.empty())
      return std::string(gcl::op_name<Op>()) + " " + std::string(Alg::name) +
             " n=" + std::to_string(n) + ": " + d;
  }
  return "";
}

template <class Comm>
std::string every_loc(Comm& comm) {
  return loc<int, int>(comm, gcl::minloc{}, gcl::ring{}, true) +
         loc<int, int>(comm, gcl::minloc{}, gcl::tree{}, true) +
         loc<double, long>(comm, gcl::maxloc{}, gcl::ring{}, false) +
         loc<double, long>(comm, gcl::maxloc{}, gcl::recursive_doubling{}, false) +
         loc<float, int>(comm, gcl::minloc{}, gcl::direct{}, true);
}

// The sum over ranks [first, last] of value<T>(r, i): exact in float for these small integers.
template <class T>
T sum_over(int first, int last, std::size_t i) {
  T s = 0;
  for (int r = first; r <= last; ++r) s += value<T>(r, i);
  return s;
}

template <class T, class Comm>
std::string averages(Comm& comm) {
  int const p = comm.size(), me = comm.rank();
  std::string errors;
  for (std::size_t n : lengths(p, 1001)) {
    auto const tagged = [&](char const* what, std::string d) {
      return d.empty() ? d : std::string(what) + " n=" + std::to_string(n) + ": " + d + "; ";
    };
    std::vector<T> mine(n), all(n);
    for (std::size_t i = 0; i < n; ++i) {
      mine[i] = value<T>(me, i);
      all[i] = sum_over<T>(0, p - 1, i) / static_cast<T>(p);
    }
    for (int k = 0; k < 2; ++k) {
      auto v = mine;
      if (k == 0)
        gcl::all_reduce(comm, v, gcl::avg{}, gcl::ring{});
      else
        gcl::all_reduce(comm, v, gcl::avg{}, gcl::tree{});
      errors += tagged(k == 0 ? "all_reduce ring" : "all_reduce tree", diff(v, all));
    }
    auto v = mine;
    gcl::reduce(comm, v, p - 1, gcl::avg{});
    errors += tagged("reduce", diff(v, me == p - 1 ? all : mine));
    gcl::detail::chunk_layout const chunks{n, p};
    std::vector<T> out(chunks.size(me));
    std::vector<T> want(all.begin() + static_cast<std::ptrdiff_t>(chunks.offset(me)),
                        all.begin() + static_cast<std::ptrdiff_t>(chunks.offset(me + 1)));
    gcl::reduce_scatter(comm, mine, out, gcl::avg{}, gcl::ring{});
    errors += tagged("reduce_scatter", diff(out, want));
    std::vector<std::size_t> counts(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) counts[static_cast<std::size_t>(r)] = chunks.size(r);
    gcl::reduce_scatterv(comm, mine, out, counts, gcl::avg{});
    errors += tagged("reduce_scatterv", diff(out, want));
    std::vector<T> prefix(n), before(n);
    for (std::size_t i = 0; i < n; ++i) {
      prefix[i] = sum_over<T>(0, me, i) / static_cast<T>(me + 1);
      before[i] = me == 0 ? mine[i] : sum_over<T>(0, me - 1, i) / static_cast<T>(me);
    }
    v = mine;
    gcl::scan(comm, v, gcl::avg{});
    errors += tagged("scan", diff(v, prefix));
    v = mine;
    gcl::exscan(comm, v, gcl::avg{});
    errors += tagged("exscan", diff(v, before));
  }
  return errors;
}

}  // namespace

BOOST_AUTO_TEST_CASE(minloc_and_maxloc_take_the_lowest_index_of_equal_values) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p), [](auto& comm) { return every_loc(comm); });
}

BOOST_AUTO_TEST_CASE(avg_divides_once_by_the_ranks_combined) {
  for (int p : world_sizes)
    run_everywhere(p, "P=" + std::to_string(p),
                   [](auto& comm) { return averages<double>(comm) + averages<float>(comm); });
}

BOOST_AUTO_TEST_CASE(the_best_rank_of_a_single_value) {
  run(7, "minloc", [](auto& comm) {
    gcl::value_index<double> best{comm.rank() == 2 || comm.rank() == 5 ? -1.0 : 3.0, comm.rank()};
    gcl::all_reduce(comm, best, gcl::minloc{});
    return best == gcl::value_index<double>{-1.0, 2} ? std::string() : "not rank 2's";
  });
}
