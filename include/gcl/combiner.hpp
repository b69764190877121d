#pragma once
/// \file
/// `gcl::combiner`: a reduction handed to a transport, so that a message is combined into its
/// destination as its bytes arrive (`combining_transport`), instead of landing in a scratch
/// buffer that the algorithm then reads back to reduce. For a large message that buffer's
/// round trip through memory is a third of a ring all_reduce's memory traffic.
///
/// Type-erased (a function pointer, the operator's address, the element size), because
/// transports move bytes and know nothing of element types or operators.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "detail/reduce_kernel.hpp"

namespace gcl {

/// Which operand of the operator the received elements are. Algorithms that keep the lower
/// ranks' partial result on the left (so that a non-commutative operator sees its operands in
/// rank order) pick the side per exchange.
enum class received_operand : std::uint8_t {
  right,  ///< `acc[i] = op(acc[i], got[i])`
  left,   ///< `acc[i] = op(got[i], acc[i])`
};

/// `acc = op(acc, got)` (or `op(got, acc)`) over whole elements of a received message.
///
///     auto c = gcl::combiner::of<float>(gcl::sum{}, gcl::received_operand::right);
///     c(acc_bytes, got_bytes, n * sizeof(float));
///
/// The operator must outlive the combiner. A transport calls it with `acc` aligned for the
/// element type (it points into the receive buffer at a whole element) and `got` anywhere
/// (a ring in shared memory, a socket buffer): a misaligned `got` is copied through an aligned
/// block first.
struct combiner {
  using function = void (*)(void const* op, std::byte* acc, std::byte const* got,
                            std::size_t elements, received_operand side);

  /// `out = op(acc, got)` (or `op(got, acc)`), leaving `acc` as it was.
  using function_to = void (*)(void const* op, std::byte* out, std::byte const* acc,
                               std::byte const* got, std::size_t elements, received_operand side);

  function apply = nullptr;
  void const* op = nullptr;
  std::size_t element_size = 1;
  received_operand side = received_operand::right;
  function_to apply_to = nullptr;

  /// Combines `bytes` (a whole number of elements) of `got` into `acc`; they must not overlap.
  void operator()(std::byte* acc, std::byte const* got, std::size_t bytes) const {
    apply(op, acc, got, bytes / element_size, side);
  }

  /// Writes what `(*this)(acc, got, bytes)` would leave in `acc` into `out` instead (a
  /// transport's outgoing message: shm's reduce_and_forward), with `acc` unchanged. None of the
  /// three may overlap; any may be misaligned.
  void to(std::byte* out, std::byte const* acc, std::byte const* got, std::size_t bytes) const {
    apply_to(op, out, acc, got, bytes / element_size, side);
  }

  template <class T, class Op>
  static combiner of(Op const& op, received_operand side) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    return {&combine<T, Op>, &op, sizeof(T), side, &combine_to<T, Op>};
  }

 private:
  template <class T, class Op>
  static void combine_to(void const* erased, std::byte* out_bytes, std::byte const* acc_bytes,
                         std::byte const* got_bytes, std::size_t n, received_operand side) {
    auto const& op = *static_cast<Op const*>(erased);
    auto run = [&](T* out, T const* acc, T const* got, std::size_t k) {
      if (side == received_operand::right)
        detail::reduce_to(out, acc, got, k, op);
      else
        detail::reduce_to(out, got, acc, k, op);
    };
    auto aligned = [](void const* p) {
      return reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0;
    };
    if (aligned(out_bytes) && aligned(acc_bytes) && aligned(got_bytes))
      return run(reinterpret_cast<T*>(out_bytes), reinterpret_cast<T const*>(acc_bytes),
                 reinterpret_cast<T const*>(got_bytes), n);
    // Misaligned: through aligned blocks, which stay in the first-level cache.
    constexpr std::size_t block = std::max<std::size_t>(2048 / sizeof(T), 1);
    alignas(T) std::byte a[block * sizeof(T)], g[block * sizeof(T)], o[block * sizeof(T)];
    for (std::size_t i = 0; i < n; i += block) {
      std::size_t const k = std::min(block, n - i);
      std::memcpy(a, acc_bytes + i * sizeof(T), k * sizeof(T));
      std::memcpy(g, got_bytes + i * sizeof(T), k * sizeof(T));
      run(reinterpret_cast<T*>(o), reinterpret_cast<T const*>(a), reinterpret_cast<T const*>(g), k);
      std::memcpy(out_bytes + i * sizeof(T), o, k * sizeof(T));
    }
  }

  template <class T, class Op>
  static void combine(void const* erased, std::byte* acc_bytes, std::byte const* got_bytes,
                      std::size_t n, received_operand side) {
    auto const& op = *static_cast<Op const*>(erased);
    auto* acc = reinterpret_cast<T*>(acc_bytes);
    auto run = [&](T* a, T const* g, std::size_t k) {
      if (side == received_operand::right)
        detail::reduce_into(a, g, k, op);
      else
        detail::reduce_from_lower(a, g, k, op);
    };
    if (reinterpret_cast<std::uintptr_t>(got_bytes) % alignof(T) == 0)
      return run(acc, reinterpret_cast<T const*>(got_bytes), n);
    // Misaligned (T would be read where it may not be): through an aligned block, which stays
    // in the first-level cache.
    constexpr std::size_t block = std::max<std::size_t>(4096 / sizeof(T), 1);
    alignas(T) std::byte aligned[block * sizeof(T)];
    for (std::size_t i = 0; i < n; i += block) {
      std::size_t const k = std::min(block, n - i);
      std::memcpy(aligned, got_bytes + i * sizeof(T), k * sizeof(T));
      run(acc + i, reinterpret_cast<T const*>(aligned), k);
    }
  }
};

}  // namespace gcl
