#pragma once
// communicator::sendrecv_reduce's contract, checked on any communicator: every rank sends to its
// left neighbour and combines what its right neighbour sends into its own buffer, with an
// operator that is not commutative (a swapped operand shows), on both operand sides, at the
// sizes the caller names, for a 4-byte element and a 12-byte one (whose elements straddle the
// pieces a ring or a partial read cuts a message into).
//
//     auto wrong = gcl::spawn<gcl::shm_transport>(3, [](auto& comm) {
//       return gcl_test::check_sendrecv_reduce(comm, {0, 1, 1000, 100000});
//     });  // "" per rank, or the first wrong element

#include <gcl/communicator.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace gcl_test {

struct triple {
  std::uint32_t a, b, c;
  bool operator==(triple const&) const = default;
};

// x * m + y per field: op(x, y) != op(y, x), and exact (unsigned arithmetic wraps).
struct affine_mix {
  std::uint32_t operator()(std::uint32_t x, std::uint32_t y) const { return x * 3u + y; }
  triple operator()(triple const& x, triple const& y) const {
    return {x.a * 3u + y.a, x.b * 5u + y.b, x.c * 7u + y.c};
  }
};

// Element i of buffer `k` of `rank`: different per rank, buffer and element.
template <class T>
T element_of(int rank, int k, std::size_t i) {
  auto const v =
      static_cast<std::uint32_t>(rank * 1000003 + k * 7919 + static_cast<int>(i % 65521));
  if constexpr (std::is_same_v<T, triple>)
    return {v, v ^ 0x5a5a5a5au, v * 2654435761u};
  else
    return v;
}

template <class T, class Comm>
std::string check_sendrecv_reduce_of(Comm& comm, std::vector<std::size_t> const& counts) {
  int const p = comm.size(), me = comm.rank();
  int const left = (me + p - 1) % p, right = (me + 1) % p;
  affine_mix const op;
  int k = 0;
  for (auto side : {gcl::received_operand::right, gcl::received_operand::left}) {
    for (std::size_t n : counts) {
      std::vector<T> out(n), acc(n);
      for (std::size_t i = 0; i < n; ++i) {
        out[i] = element_of<T>(me, k, i);
        acc[i] = element_of<T>(me, k + 1, i);
      }
      comm.sendrecv_reduce(left, std::span<T const>(out), right, std::span<T>(acc), op, side,
                           gcl::tag{5});
      for (std::size_t i = 0; i < n; ++i) {
        T const got = element_of<T>(right, k, i), mine = element_of<T>(me, k + 1, i);
        T const want = side == gcl::received_operand::right ? op(mine, got) : op(got, mine);
        if (!(acc[i] == want))
          return std::to_string(sizeof(T)) + "-byte elements, " + std::to_string(n) +
                 " of them, received on the " +
                 (side == gcl::received_operand::right ? "right" : "left") + ": element " +
                 std::to_string(i) + " is wrong";
      }
      k += 2;
    }
  }
  return "";
}

template <class Comm>
std::string check_sendrecv_reduce(Comm& comm, std::vector<std::size_t> const& counts) {
  std::string wrong = check_sendrecv_reduce_of<std::uint32_t>(comm, counts);
  if (wrong.empty()) wrong = check_sendrecv_reduce_of<triple>(comm, counts);
  return wrong;
}

}  // namespace gcl_test
