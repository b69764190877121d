#pragma once
/// \file
/// The trainer picks gcl's all_reduce algorithm by name at run time (`--algorithm ring`).
/// `make_reducer(comm, name)` binds `gcl::all_reduce(comm, span, op, Alg{})` for the few
/// (type, operator) pairs the trainer needs, and `gcl::iall_reduce` for the float sum of
/// `--overlap`, so the training loop is compiled once.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

#include <gcl/gcl.hpp>  // every collective and every algorithm

namespace lenet5 {

/// The all_reduce calls of the trainer, bound to one communicator and one algorithm.
///
///     auto reduce = lenet5::make_reducer(comm, "ring");
///     reduce.sum(params);                          // std::span<float>
///     gcl::collective_request r = reduce.isum(g);  // returns at once; g is gcl's until r.wait()
struct reducer {
  std::function<void(std::span<float>)> sum_f;
  std::function<void(std::span<double>)> sum_d;
  std::function<void(std::span<std::uint64_t>)> min_u;
  /// Empty when the communicator's transport has no non-blocking collectives.
  std::function<gcl::collective_request(std::span<float>)> isum_f;
  void sum(std::span<float> s) const { sum_f(s); }
  void sum(std::span<double> s) const { sum_d(s); }
  void min(std::span<std::uint64_t> s) const { min_u(s); }
  gcl::collective_request isum(std::span<float> s) const { return isum_f(s); }
  bool has_isum() const { return bool(isum_f); }
};

/// The algorithms `--algorithm` can name, in the order --help lists them: the one list both
/// the names and `make_reducer` come from.
using algorithm_list = std::tuple<gcl::ring, gcl::tree, gcl::direct, gcl::parameter_server,
                                  gcl::recursive_doubling, gcl::halving_doubling, gcl::automatic>;

/// "ring, tree, direct, ...": the names `--algorithm` accepts, for --help and errors.
inline std::string algorithm_names() {
  std::string s;
  std::apply([&](auto... a) { ((s += (s.empty() ? "" : ", ") + std::string(a.name)), ...); },
             algorithm_list{});
  return s;
}

/// Binds `comm`'s all_reduce with the algorithm called `name`; throws std::invalid_argument
/// for a name that is not in `algorithm_list`. `isum` is bound only if the transport has
/// non-blocking collectives (`gcl::forkable_transport`).
template <class Comm>
reducer make_reducer(Comm& comm, std::string const& name) {
  auto bind = [&comm](auto alg) {
    reducer r{
        [&comm, alg](std::span<float> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
        [&comm, alg](std::span<double> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
        [&comm, alg](std::span<std::uint64_t> s) { gcl::all_reduce(comm, s, gcl::min{}, alg); },
        {}};
    if constexpr (gcl::forkable_transport<typename Comm::transport_type>)
      r.isum_f = [&comm, alg](std::span<float> s) {
        // An rvalue span: iall_reduce keeps an lvalue buffer argument by reference, and `s`
        // dies when this returns.
        return gcl::iall_reduce(comm, std::span<float>(s), gcl::sum{}, alg);
      };
    return r;
  };
  std::optional<reducer> found;
  auto try_one = [&](auto alg) {
    if (!found && name == alg.name) found = bind(alg);
  };
  std::apply([&](auto... algs) { (try_one(algs), ...); }, algorithm_list{});
  if (!found)
    throw std::invalid_argument("unknown --algorithm '" + name + "' (known: " + algorithm_names() +
                                ")");
  return *std::move(found);
}

}  // namespace lenet5
