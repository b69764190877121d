#pragma once
/// \file
/// How collectives see their buffers: any contiguous range of trivially copyable elements, or
/// a single trivially copyable value, as a `std::span` (so algorithms are instantiated per
/// element type, not per container type).

#include <ranges>
#include <span>
#include <type_traits>

#include "../concepts.hpp"

namespace gcl::detail {

/// A buffer a collective may write: a range of non-const elements, or a non-const lvalue value.
template <class R>
concept writable_payload =
    (sendable_range<std::remove_cvref_t<R>> &&
     !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>) ||
    (sendable_value<std::remove_reference_t<R>> && std::is_lvalue_reference_v<R> &&
     !std::is_const_v<std::remove_reference_t<R>>);

/// A buffer a collective only reads: any range or value that `communicator::send` accepts.
template <class R>
concept readable_payload = sendable<std::remove_cvref_t<R>>;

template <class R>
auto writable_span(R&& r) {
  if constexpr (std::ranges::contiguous_range<std::remove_cvref_t<R>>)
    return std::span(std::ranges::data(r), std::ranges::size(r));
  else
    return std::span<std::remove_reference_t<R>>(&r, 1);
}

template <class R>
auto readable_span(R const& r) {
  if constexpr (std::ranges::contiguous_range<R>) {
    using T = std::remove_cv_t<std::ranges::range_value_t<R>>;
    return std::span<T const>(std::ranges::data(r), std::ranges::size(r));
  } else {
    return std::span<R const>(&r, 1);
  }
}

/// The element type of a payload.
template <class R>
using payload_value_t = std::remove_cv_t<typename decltype(readable_span(
    std::declval<std::remove_cvref_t<R> const&>()))::element_type>;

}  // namespace gcl::detail
