#pragma once
/// \file
/// `gcl::barrier`: no rank returns before every rank has called it.

#include "../algorithm/tree.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"

namespace gcl {

/// An algorithm with a `barrier(comm)` member.
template <class Alg, class Comm>
concept barrier_algorithm = algorithm<Alg> && requires(Alg const& a, Comm& c) {
  a.barrier(c);
};

/// Returns once every rank of the group has entered the barrier.
///
///     write_my_file();
///     gcl::barrier(comm);  // gcl::tree{} by default: 2 ceil(log2 P) steps of empty messages
///     read_everyones_files();
template <class Transport, class Alg = tree>
void barrier(communicator<Transport>& comm, Alg const& alg = {}) {
  static_assert(barrier_algorithm<Alg, communicator<Transport>>,
                "gcl::barrier: the algorithm passed last does not implement barrier; "
                "doc/algorithms.md lists which algorithm implements which collective");
  auto scope = comm.begin_call(make_call_info<std::byte>(call_kind::barrier, 0, -1, "", Alg::name));
  if constexpr (barrier_algorithm<Alg, communicator<Transport>>)  // no second error after the
                                                                  // static_assert
    alg.barrier(comm);
}

}  // namespace gcl
