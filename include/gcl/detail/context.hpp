#pragma once
/// \file
/// Communicator contexts: how the communicators that `split` and `dup` make share one transport
/// without their messages meeting. Each communicator has a context id, the same on all its
/// members; the world communicator has 0. The id rides in bits 20-29 of every tag the
/// communicator sends with (user tags are below 2^20, collectives' tag is 2^31), so that the
/// transport's per-(source, tag) FIFO keeps the communicators apart, and in bits 40-49 of every
/// collective's sequence number, so that the transport's checks compare a message only with
/// calls of its own communicator. No transport or wire format knows of it.
///
/// Ids are agreed on as MPI agrees on its context ids: each rank keeps the set of ids its live
/// communicators use; a split or dup takes the lowest id free on every rank of the parent (the
/// bitwise and of their free sets, which the parent's ranks exchange anyway), and a
/// communicator's destructor gives its id back on its rank, and tells a call-aware transport
/// so (`end_context`): a communicator that takes the id again numbers its collectives from #1.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "../call_info.hpp"

namespace gcl::detail {

inline constexpr int context_bits = 10;
/// How many communicators, the world's included, a rank may have alive at once.
inline constexpr std::uint32_t context_count = 1u << context_bits;
inline constexpr int context_tag_shift = 20;
inline constexpr int context_sequence_shift = sequence_context_shift;
static_assert(tag_user_limit == 1u << context_tag_shift,
              "user tags must end where the context bits begin");

/// The tag a communicator of context `ctx` puts on the wire for `tg`.
constexpr tag context_tag(tag tg, std::uint32_t ctx) noexcept {
  return tag{static_cast<std::uint32_t>(tg) | (ctx << context_tag_shift)};
}
/// The context a wire tag belongs to.
constexpr std::uint32_t context_of(tag tg) noexcept {
  return (static_cast<std::uint32_t>(tg) >> context_tag_shift) & (context_count - 1);
}
/// The user's (or collective's) tag without its context bits.
constexpr tag tag_without_context(tag tg) noexcept {
  return tag{static_cast<std::uint32_t>(tg) & ~((context_count - 1) << context_tag_shift)};
}
/// The sequence number a communicator of context `ctx` gives its `n`-th collective.
constexpr std::uint64_t context_sequence(std::uint64_t n, std::uint32_t ctx) noexcept {
  return n | (std::uint64_t{ctx} << context_sequence_shift);
}

/// A set of context ids as a bitmask, the unit the ranks exchange to agree on a free id.
struct context_set {
  std::array<std::uint64_t, context_count / 64> words{};

  void insert(std::uint32_t id) noexcept { words[id / 64] |= std::uint64_t{1} << (id % 64); }
  void erase(std::uint32_t id) noexcept { words[id / 64] &= ~(std::uint64_t{1} << (id % 64)); }
  /// Adds the ids of `other`: after the exchange, the ids some rank uses.
  context_set& operator|=(context_set const& other) noexcept {
    for (std::size_t i = 0; i < words.size(); ++i) words[i] |= other.words[i];
    return *this;
  }
  /// The lowest id not in the set, or 0 (the world's, always in use) if every id is.
  std::uint32_t lowest_free() const noexcept {
    for (std::size_t i = 0; i < words.size(); ++i)
      if (words[i] != ~std::uint64_t{0})
        return static_cast<std::uint32_t>(i * 64 +
                                          static_cast<std::size_t>(std::countr_one(words[i])));
    return 0;
  }
};

/// The ids that one rank's live communicators over one transport use. Shared by the world
/// communicator and every communicator split from it on that rank (never between ranks).
struct context_registry {
  context_set used;
  /// Called with an id given back; set by the world communicator over a call-aware transport.
  std::function<void(std::uint32_t)> released;
  context_registry() noexcept { used.insert(0); }
};

/// A communicator's hold on its context id: marks it used in its rank's registry and gives it
/// back when destroyed (the world's, 0, is never given back). Moving hands the hold over.
class context_lease {
 public:
  /// The world's: id 0 and a new registry for the communicators split from it.
  context_lease() : registry_(std::make_shared<context_registry>()) {}
  context_lease(std::shared_ptr<context_registry> registry, std::uint32_t id) noexcept
      : registry_(std::move(registry)), id_(id) {
    registry_->used.insert(id_);
  }
  context_lease(context_lease const&) = delete;
  context_lease& operator=(context_lease const&) = delete;
  context_lease(context_lease&& other) noexcept
      : registry_(std::move(other.registry_)), id_(std::exchange(other.id_, 0)) {}
  context_lease& operator=(context_lease&& other) noexcept {
    if (this != &other) {
      release();
      registry_ = std::move(other.registry_);
      id_ = std::exchange(other.id_, 0);
    }
    return *this;
  }
  ~context_lease() { release(); }

  std::uint32_t id() const noexcept { return id_; }
  std::shared_ptr<context_registry> const& registry() const noexcept { return registry_; }

 private:
  void release() noexcept {
    if (id_ != 0 && registry_) {
      registry_->used.erase(id_);
      // From a destructor: a transport that fails to forget costs at worst a false mismatch
      // later, which is reported; throwing here would end the program.
      if (registry_->released) try {
          registry_->released(id_);
        } catch (...) {
        }
    }
    id_ = 0;
  }
  std::shared_ptr<context_registry> registry_;
  std::uint32_t id_ = 0;
};

/// " [in communicator 3 (split or dup): its ranks 0..2 are ranks 1, 4, 6 of the transport, ...]":
/// what a sub-communicator adds to an error its transport reports, which names ranks in the
/// transport's numbering.
inline std::string context_note(std::uint32_t ctx, std::size_t size, int const* world_ranks) {
  std::string s = " [in communicator " + std::to_string(ctx) + " (split or dup): its ranks 0.." +
                  std::to_string(size == 0 ? 0 : size - 1) + " are ranks ";
  for (std::size_t i = 0; i < size; ++i) {
    if (i != 0) s += ", ";
    s += std::to_string(world_ranks[i]);
  }
  return s + " of the transport, which the message above names]";
}

}  // namespace gcl::detail
