#pragma once
/// \file
/// The trainer picks gcl's all_reduce algorithm by name at run time (`--algorithm ring`).
/// `make_reducer(comm, name)` binds `gcl::all_reduce(comm, span, op, Alg{})` for the few
/// (type, operator) pairs the trainer needs, so the training loop is compiled once.

#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>

#include <gcl/gcl.hpp>

#if __has_include(<gcl/collective/all_reduce.hpp>)
#include <gcl/collective/all_reduce.hpp>
#endif
#if __has_include(<gcl/algorithm/ring.hpp>)
#include <gcl/algorithm/ring.hpp>
#define LENET5_HAS_RING 1
#endif
#if __has_include(<gcl/algorithm/tree.hpp>)
#include <gcl/algorithm/tree.hpp>
#define LENET5_HAS_TREE 1
#endif
#if __has_include(<gcl/algorithm/direct.hpp>)
#include <gcl/algorithm/direct.hpp>
#define LENET5_HAS_DIRECT 1
#endif
#if __has_include(<gcl/algorithm/parameter_server.hpp>)
#include <gcl/algorithm/parameter_server.hpp>
#define LENET5_HAS_PARAMETER_SERVER 1
#endif
#if __has_include(<gcl/algorithm/recursive_doubling.hpp>)
#include <gcl/algorithm/recursive_doubling.hpp>
#define LENET5_HAS_RECURSIVE_DOUBLING 1
#endif
#if __has_include(<gcl/algorithm/halving_doubling.hpp>)
#include <gcl/algorithm/halving_doubling.hpp>
#define LENET5_HAS_HALVING_DOUBLING 1
#endif
#if __has_include(<gcl/algorithm/automatic.hpp>)
#include <gcl/algorithm/automatic.hpp>
#define LENET5_HAS_AUTOMATIC 1
#endif

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

/// The algorithm names this build knows (those whose headers exist), for --help and errors.
inline std::string algorithm_names() {
  std::string s;
  auto add = [&](char const* n) { s += s.empty() ? n : std::string(", ") + n; };
#ifdef LENET5_HAS_RING
  add("ring");
#endif
#ifdef LENET5_HAS_TREE
  add("tree");
#endif
#ifdef LENET5_HAS_DIRECT
  add("direct");
#endif
#ifdef LENET5_HAS_PARAMETER_SERVER
  add("parameter_server");
#endif
#ifdef LENET5_HAS_RECURSIVE_DOUBLING
  add("recursive_doubling");
#endif
#ifdef LENET5_HAS_HALVING_DOUBLING
  add("halving_doubling");
#endif
#ifdef LENET5_HAS_AUTOMATIC
  add("automatic");
#endif
  return s;
}

/// Binds `comm`'s all_reduce with the algorithm called `name`; throws std::invalid_argument
/// for a name this build does not have.
template <class Comm>
reducer make_reducer(Comm& comm, std::string const& name) {
  auto bind = [&comm](auto alg) -> reducer {
    using alg_t = decltype(alg);
    if constexpr (!requires(alg_t a, std::span<float> s) { a.all_reduce(comm, s, gcl::sum{}); })
      throw std::invalid_argument("--algorithm " + std::string(alg_t::name) +
                                  ": this build's gcl has no all_reduce for it yet");
    else
      return reducer{
          [&comm, alg](std::span<float> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
          [&comm, alg](std::span<double> s) { gcl::all_reduce(comm, s, gcl::sum{}, alg); },
          [&comm, alg](std::span<std::uint64_t> s) { gcl::all_reduce(comm, s, gcl::min{}, alg); }};
  };
  (void)bind;
#ifdef LENET5_HAS_RING
  if (name == "ring") return bind(gcl::ring{});
#endif
#ifdef LENET5_HAS_TREE
  if (name == "tree") return bind(gcl::tree{});
#endif
#ifdef LENET5_HAS_DIRECT
  if (name == "direct") return bind(gcl::direct{});
#endif
#ifdef LENET5_HAS_PARAMETER_SERVER
  if (name == "parameter_server") return bind(gcl::parameter_server{});
#endif
#ifdef LENET5_HAS_RECURSIVE_DOUBLING
  if (name == "recursive_doubling") return bind(gcl::recursive_doubling{});
#endif
#ifdef LENET5_HAS_HALVING_DOUBLING
  if (name == "halving_doubling") return bind(gcl::halving_doubling{});
#endif
#ifdef LENET5_HAS_AUTOMATIC
  if (name == "automatic") return bind(gcl::automatic{});
#endif
  throw std::invalid_argument("unknown --algorithm '" + name +
                              "' (this build has: " + algorithm_names() + ")");
}

}  // namespace lenet5
