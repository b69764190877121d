#pragma once
/// \file
/// The trainer picks gcl's all_reduce algorithm by name at run time (`--algorithm ring`).
/// `make_reducer(comm, name)` binds `gcl::all_reduce(comm, span, op, Alg{})` for the few
/// (type, operator) pairs the trainer needs, so the training loop is compiled once.

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
///     reduce.sum(params);   // std::span<float>
struct reducer {
  std::function<void(std::span<float>)> sum_f;
  std::function<void(std::span<double>)> sum_d;
  std::function<void(std::span<std::uint64_t>)> min_u;
  void sum(std::span<float> s) const { sum_f(s); }
  void sum(std::span<double> s) const { sum_d(s); }
  void min(std::span<std::uint64_t> s) const { min_u(s); }
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
/// for a name that is not in `algorithm_list`.
template <class Comm>
reducer make_reducer(Comm& comm, std::string const& name) {
  auto bind = [&comm](auto alg) {
    return reducer{
        [&comm, alg](std::span<float> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
        [&comm, alg](std::span<double> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
        [&comm, alg](std::span<std::uint64_t> s) { gcl::all_reduce(comm, s, gcl::min{}, alg); }};
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
