#pragma once
/// \file
/// `gcl::direct`: every rank talks to every other rank directly. For now it implements
/// all_to_all (pairwise exchange); the direct all_reduce of DESIGN.md joins it here.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string_view>

#include "../communicator.hpp"
#include "../detail/chunk.hpp"

namespace gcl {

/// Direct exchange. all_to_all: `P - 1` steps; at step k rank n sends block `(n + k) mod P` to
/// rank `(n + k) mod P` and receives block `(n - k) mod P` from that rank. `P (P - 1)` messages
/// of `in.size() / P` elements.
///
///     gcl::all_to_all(comm, in, out, gcl::direct{});
struct direct {
  static constexpr std::string_view name = "direct";
  static constexpr bool needs_commutative = false;

  /// Block r of `in` goes to rank r, and block r of `out` comes from rank r.
  template <class Comm, class T>
  void all_to_all(Comm& comm, std::span<T const> in, std::span<T> out) const {
    int const p = comm.size(), n = comm.rank();
    std::size_t const b = in.size() / static_cast<std::size_t>(p);
    auto at = [b](auto s, int r) { return s.subspan(static_cast<std::size_t>(r) * b, b); };
    std::ranges::copy(at(in, n), at(out, n).begin());
    // Pairing `n + k` with `n - k` at step k keeps every rank sending and receiving once per
    // step, and sends are eager, so no ordering can deadlock.
    for (int k = 1; k < p; ++k) {
      int const to = detail::mod(n + k, p), from = detail::mod(n - k, p);
      comm.sendrecv(to, at(in, to), from, at(out, from), detail::collective_tag);
    }
  }
};

}  // namespace gcl
