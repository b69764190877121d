#pragma once
/// \file
/// Reduction operators. Built-ins are commutative; a user callable is not unless it says so.

#include <algorithm>
#include <concepts>
#include <functional>
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
    return static_cast<T>(a && b);
  }
};
/// `a || b`, as a value of T.
struct logical_or {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "logical_or";
  template <detail::truth_valued T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(a || b);
  }
};
/// `a != b` as truth values, as a value of T.
struct logical_xor {
  static constexpr bool commutative = true;
  static constexpr std::string_view name = "logical_xor";
  template <detail::truth_valued T>
  constexpr T operator()(T const& a, T const& b) const {
    return static_cast<T>(!a != !b);
  }
};

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
