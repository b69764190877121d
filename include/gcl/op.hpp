#pragma once
/// \file
/// Reduction operators. Built-ins are commutative; a user callable is not unless it says so.
/// An operator may also have a member `finish(std::span<T> result, int ranks)`, which the
/// collectives call once on each result they produce (`gcl::avg` divides by `ranks`).

#include <algorithm>
#include <concepts>
#include <functional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include "concepts.hpp"

namespace gcl {

namespace detail {
// What each built-in needs of T, so that a wrong pairing (bit_and on double) fails at gcl's check
// of the call (`reduction_op`) with one message, not inside the operator.
// Not formatted: clang-format 14 reads `a * b` in a requirement as a declaration (`a* b`).
// clang-format off
template <class T>
concept addable = requires(T const& a, T const& b) {
  { a + b } -> std::convertible_to<T>;
};
template <class T>
concept multipliable = requires(T const& a, T const& b) {
  { a * b } -> std::convertible_to<T>;
};
template <class T>
concept less_comparable = requires(T const& a, T const& b) {
  { a < b } -> std::convertible_to<bool>;
};
template <class T>
concept bitwise_combinable = requires(T const& a, T const& b) {
  { a & b } -> std::convertible_to<T>;
  { a | b } -> std::convertible_to<T>;
  { a ^ b } -> std::convertible_to<T>;
};
template <class T>
concept truth_valued = requires(T const& a, T const& b) {
  { a && b } -> std::convertible_to<bool>;
  { a || b } -> std::convertible_to<bool>;
  { !a } -> std::convertible_to<bool>;
};
// clang-format on

// A value as the truth value that &&, || and ! take of it. For an arithmetic type that is its
// comparison with zero, here said with an explicit cast: clang's -Wconversion warns of the
// implicit one from a floating-point type. Any other type goes to its own operators as it is.
template <class T>
constexpr decltype(auto) truth(T const& a) noexcept {
  if constexpr (std::is_arithmetic_v<T>)
    return static_cast<bool>(a);
  else
    return (a);
}
}  // namespace detail

/// `a + b`.   `gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});`
struct sum {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "sum";
  template <detail::addable T>
  constexpr T operator()(T const& a, T const& b) const {
    return a + b;
  }
};
/// `a * b`.
struct prod {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "prod";
  template <detail::multipliable T>
  constexpr T operator()(T const& a, T const& b) const {
    return a * b;
  }
};
/// The smaller of `a` and `b` (`a` when equal).
struct min {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "min";
  template <detail::less_comparable T>
  constexpr T operator()(T const& a, T const& b) const {
    return b < a ? b : a;
  }
};
/// The larger of `a` and `b` (`a` when equal).
struct max {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "max";
  template <detail::less_comparable T>
  constexpr T operator()(T const& a, T const& b) const {
    return a < b ? b : a;
  }
};
/// `a & b` for integers.
struct bit_and {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "bit_and";
  template <detail::bitwise_combinable T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(a & b);
  }
};
/// `a | b` for integers.
struct bit_or {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "bit_or";
  template <detail::bitwise_combinable T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(a | b);
  }
};
/// `a ^ b` for integers.
struct bit_xor {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "bit_xor";
  template <detail::bitwise_combinable T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(a ^ b);
  }
};
/// `a && b`, as a value of T (bool, or 0/1 integers).
struct logical_and {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "logical_and";
  template <detail::truth_valued T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(detail::truth(a) && detail::truth(b));
  }
};
/// `a || b`, as a value of T.
struct logical_or {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "logical_or";
  template <detail::truth_valued T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(detail::truth(a) || detail::truth(b));
  }
};
/// `a != b` as truth values, as a value of T.
struct logical_xor {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "logical_xor";
  template <detail::truth_valued T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(!detail::truth(a) != !detail::truth(b));
  }
};

/// A value and where it came from (an index: a rank, a position), reduced by `minloc` and
/// `maxloc`: MPI's MPI_DOUBLE_INT and friends. Trivially copyable, so a payload like any other.
///
///     gcl::value_index<double> best{loss, comm.rank()};
///     gcl::all_reduce(comm, best, gcl::minloc{});  // best.index: the rank with the lowest loss
template <class T, class I = int>
struct value_index {
  T value{};
  I index{};
  friend constexpr bool operator==(value_index const&, value_index const&) = default;
};

/// The `value_index` with the smaller value; of equal values, the lower index (as MPI_MINLOC),
/// which makes it commutative as well as associative.
struct minloc {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "minloc";
  template <detail::less_comparable T, detail::less_comparable I>
  constexpr value_index<T, I> operator()(value_index<T, I> const& a,
                                         value_index<T, I> const& b) const {
    if (b.value < a.value) return b;
    if (a.value < b.value) return a;
    return b.index < a.index ? b : a;
  }
};
/// The `value_index` with the larger value; of equal values, the lower index (as MPI_MAXLOC).
struct maxloc {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "maxloc";
  template <detail::less_comparable T, detail::less_comparable I>
  constexpr value_index<T, I> operator()(value_index<T, I> const& a,
                                         value_index<T, I> const& b) const {
    if (a.value < b.value) return b;
    if (b.value < a.value) return a;
    return b.index < a.index ? b : a;
  }
};

/// The mean over the ranks, for floating-point types (torch's ReduceOp.AVG): combined as a
/// sum, then divided once by the number of ranks combined, by the collective (`finish`), on the
/// ranks that receive a result. all_reduce, reduce, reduce_scatter(v) divide by the world size;
/// scan by rank + 1 and exscan by rank (the ranks each prefix combines).
///
///     gcl::all_reduce(comm, gradient, gcl::avg{});  // the mean gradient on every rank
struct avg {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "avg";
  template <std::floating_point T>
  constexpr T operator()(T const& a, T const& b) const {
    return a + b;
  }
  /// `result` combines `ranks` ranks' data: divide it by their number.
  template <std::floating_point T>
  void finish(std::span<T> result, int ranks) const {
    T const n = static_cast<T>(ranks);
    for (auto& x : result) x /= n;
  }
};

namespace detail {
/// What a collective does to a result that combines `ranks` ranks' data: the operator's
/// `finish(result, ranks)` if it has one (avg divides), nothing otherwise.
template <class Op, class T>
void finish(Op const& op, std::span<T> result, int ranks) {
  if constexpr (requires { op.finish(result, ranks); }) op.finish(result, ranks);
}
}  // namespace detail

/// A user callable declared commutative: `gcl::commutative([](int a, int b) { return a + b; })`.
template <class F>
struct commutative_fn {
  static constexpr bool commutative = true;
  F f;
  template <class T>
  constexpr auto operator()(T const& a, T const& b) const -> decltype(std::invoke(f, a, b)) {
    return std::invoke(f, a, b);
  }
};

/// Wraps `f` so that ring and the other reordering algorithms accept it.
///
///     gcl::all_reduce(comm, v, gcl::commutative(gcl_user_add), gcl::ring{});
template <class F>
constexpr commutative_fn<std::decay_t<F>> commutative(F&& f) {
  return {std::forward<F>(f)};
}

/// The operator's name for error messages and the wire: "sum", ..., or "custom".
template <class Op>
constexpr std::string_view op_name() noexcept {
  if constexpr (requires { std::remove_cvref_t<Op>::name; })
    return std::string_view(std::remove_cvref_t<Op>::name);
  else
    return "custom";
}

}  // namespace gcl
