#pragma once
/// \file
/// `gcl::parameter_server`: workers push their vectors to one server rank, which reduces them
/// in rank order and sends the result back to every worker: 2 rounds, and the server handles
/// all traffic, so its link is the bottleneck.
///
/// Two layouts:
///  - `parameter_server{}`: rank 0 serves and is also a worker (its own data is the first
///    operand). `2 (P - 1)` messages of p elements.
///  - `parameter_server{.dedicated_server = true}`: the highest rank, P - 1, is a server that
///    holds no data: its input is ignored, and it ends with the result like everyone else (it
///    computed it; no message is needed). The P - 1 other ranks are the workers, so with n
///    workers the group has n + 1 ranks and `2 n` messages are sent. The last rank is chosen
///    so that the workers keep ranks 0..n-1 (rank 0 stays the usual "main" worker that logs).
///    With one rank there is no worker: nothing is sent, data is unchanged.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../cost_model.hpp"
#include "../detail/reduce_kernel.hpp"

namespace gcl {

/// Parameter server (see the file comment):
///
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::parameter_server{});   // rank 0 serves
///     gcl::all_reduce(comm, v, gcl::sum{}, gcl::parameter_server{.dedicated_server = true});
struct parameter_server {
  static constexpr std::string_view name = "parameter_server";
  /// The server combines in rank order.
  static constexpr bool needs_commutative = false;

  /// The last rank serves and holds no data, instead of rank 0 serving and working.
  bool dedicated_server = false;

  /// The rank that serves in a group of `p`.
  constexpr int server(int p) const noexcept { return dedicated_server ? p - 1 : 0; }

  template <class Comm, class T, class Op>
  void all_reduce(Comm& comm, std::span<T> data, Op const& op) const {
    int const p = comm.size(), me = comm.rank(), s = server(p);
    if (p == 1) return;
    if (me != s) {
      comm.send(s, std::span<T const>(data), detail::collective_tag);
      comm.recv(s, data, detail::collective_tag);
      return;
    }
    auto tmp = comm.template scratch<T>(data.size(), 0);
    int const first = dedicated_server ? 0 : 1, last = dedicated_server ? p - 2 : p - 1;
    int r = first;
    if (dedicated_server) comm.recv(r++, data, detail::collective_tag);  // own data is ignored
    for (; r <= last; ++r) {
      comm.recv(r, tmp, detail::collective_tag);
      detail::reduce_into(data.data(), tmp.data(), data.size(), op);
    }
    for (r = first; r <= last; ++r) comm.send(r, std::span<T const>(data), detail::collective_tag);
  }

  /// The critical path is the server's: it receives (and reduces) the workers' vectors one
  /// after the other, then sends the result to each.
  template <class F>
  void schedule(int p, std::size_t count, std::size_t element_size, F&& step) const {
    if (p <= 1) return;
    std::size_t const bytes = count * element_size, workers = static_cast<std::size_t>(p - 1);
    std::size_t const reduced = dedicated_server ? workers - 1 : workers;
    // The workers' sends overlap each other; the server's receives and reductions do not.
    step(cost_step{workers, bytes, reduced * bytes, 1});
    step(cost_step{workers, bytes, 0, 1});
  }
};

}  // namespace gcl
