#pragma once
/// \file
/// `gcl::all_to_allv`: every rank sends a block of a size of its own to every rank.

#include <span>

#include "../algorithm/direct.hpp"
#include "../call_info.hpp"
#include "../communicator.hpp"
#include "../detail/collective_checks.hpp"
#include "../detail/payload.hpp"

namespace gcl {

/// An algorithm with an `all_to_allv(comm, std::span<T const>, std::span<std::size_t const>,
/// std::span<T>, std::span<std::size_t const>)` member.
template <class Alg, class Comm, class T>
concept all_to_allv_algorithm = algorithm<Alg> &&
    requires(Alg const& a, Comm& c, std::span<T const> in, std::span<T> out,
             std::span<std::size_t const> counts) {
  a.all_to_allv(c, in, counts, out, counts);
};

/// Like `all_to_all`, with blocks of any size (0 allowed): `in` holds P blocks in rank order,
/// `send_counts[r]` elements for rank r, and `out` receives P blocks in rank order,
/// `recv_counts[r]` elements from rank r. `in.size()` and `out.size()` are the sums of the
/// counts; `send_counts[rank] == recv_counts[rank]` (the block a rank keeps). Rank s's
/// `send_counts[d]` must equal rank d's `recv_counts[s]`: every block is a message, even an
/// empty one, and a block of another size than its receiver expects fails with
/// `errc::mismatch` naming both ranks. `in` and `out` must not overlap. As MPI_Alltoallv and
/// torch's all_to_all_single with split sizes, without displacements (blocks are contiguous).
///
///     // rank r sends r + 1 copies of r to everyone
///     std::vector<std::size_t> send(P, r + 1), recv(P);
///     for (int s = 0; s < P; ++s) recv[s] = s + 1;
///     std::vector<int> in(P * (r + 1), r), out(P * (P + 1) / 2);
///     gcl::all_to_allv(comm, in, send, out, recv);  // gcl::direct{} by default
template <class Transport, class In, class Out, class Alg = direct>
requires detail::readable_payload<In> && detail::writable_payload<Out&&>
void all_to_allv(communicator<Transport>& comm, In const& in,
                 std::span<std::size_t const> send_counts, Out&& out,
                 std::span<std::size_t const> recv_counts, Alg const& alg = {}) {
  using T = detail::payload_value_t<In>;
  static_assert(std::is_same_v<T, detail::payload_value_t<Out>>,
                "gcl::all_to_allv: in and out must have the same element type");
  static_assert(all_to_allv_algorithm<Alg, communicator<Transport>, T>,
                "gcl::all_to_allv: the algorithm passed last does not implement all_to_allv; "
                "doc/algorithms.md lists which algorithm implements which collective");
  int const me = comm.rank();
  auto const at = static_cast<std::size_t>(me);
  detail::check_counts(me, comm.size(), "all_to_allv", "send_counts", send_counts);
  detail::check_counts(me, comm.size(), "all_to_allv", "recv_counts", recv_counts);
  std::span<T const> i = detail::readable_span(in);
  std::span<T> o = detail::writable_span(std::forward<Out>(out));
  detail::check_size(me, "all_to_allv", "in", i.size(), detail::sum_of(send_counts),
                     [&] { return "the sum of send_counts"; });
  detail::check_size(me, "all_to_allv", "out", o.size(), detail::sum_of(recv_counts),
                     [&] { return "the sum of recv_counts"; });
  detail::check_size(
      me, "all_to_allv", "the block it keeps", recv_counts[at], send_counts[at], [&] {
        return "recv_counts[" + std::to_string(me) + "] == send_counts[" + std::to_string(me) + "]";
      });
  auto scope = comm.begin_call(make_call_info<T>(call_kind::all_to_allv, 0, -1, "", Alg::name));
  if constexpr (all_to_allv_algorithm<Alg, communicator<Transport>,
                                      T>)  // no second error after the static_assert
    alg.all_to_allv(comm, i, send_counts, o, recv_counts);
}

}  // namespace gcl
