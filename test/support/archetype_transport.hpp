#pragma once
// The transport archetype: exactly the members `gcl::transport` requires (rank, size, send,
// recv) and none of those a transport may have (set_call, sendrecv, irecv, a group for spawn,
// default_all_reduce). Every algorithm is meant to run on any transport; over this one the
// communicator takes every fallback (sendrecv is send then recv, irecv receives in wait(), no
// call checks), so a test that passes over it shows that the algorithm needs nothing more than
// the required members. The algorithm and collective tests run over it as well as over
// inproc_transport, counting<inproc_transport> and TCP (test/collective/support.hpp,
// test/algorithm/accounting.hpp).
//
// It moves the bytes through one rank's inproc_transport, which it refers to and does not own,
// so that spawn_archetype can reuse gcl::spawn's threads, abort and error propagation.
//
//     auto ranks = gcl_test::spawn_archetype(4, [](auto& comm) { return comm.rank(); });
//     // comm: gcl::communicator<gcl_test::archetype_transport>&

#include <gcl/communicator.hpp>
#include <gcl/concepts.hpp>
#include <gcl/spawn.hpp>
#include <gcl/transport/inproc.hpp>

#include <cstddef>
#include <span>
#include <utility>

namespace gcl_test {

class archetype_transport {
 public:
  explicit archetype_transport(gcl::inproc_transport& inner) noexcept : inner_(&inner) {}

  int rank() const { return inner_->rank(); }
  int size() const { return inner_->size(); }
  void send(int peer, gcl::tag tg, std::span<std::byte const> out) { inner_->send(peer, tg, out); }
  void recv(int peer, gcl::tag tg, std::span<std::byte> in) { inner_->recv(peer, tg, in); }

 private:
  gcl::inproc_transport* inner_;
};

// What makes it the archetype: required yes, optional none (if one of these fails, a member
// crept in and the fallbacks are no longer what the tests over it exercise).
template <class T>
inline constexpr bool has_all_reduce_hint = requires {
  T::default_all_reduce;
};
static_assert(gcl::transport<archetype_transport>);
static_assert(!gcl::call_aware_transport<archetype_transport>);
static_assert(!gcl::sendrecv_transport<archetype_transport>);
static_assert(!gcl::irecv_transport<archetype_transport>);
static_assert(!gcl::group_transport<archetype_transport>);
static_assert(!has_all_reduce_hint<archetype_transport>);
static_assert(has_all_reduce_hint<gcl::inproc_transport>);  // so the check above can fail

/// `gcl::spawn` over the archetype: runs `f(comm)` on `n` threads with `comm` a
/// `gcl::communicator<Transport>&`, where `Transport` is `archetype_transport` or a decorator
/// constructible from one (`gcl::counting<archetype_transport>`). A rank that throws releases
/// the others and the first error is rethrown, as by `gcl::spawn` (whose inproc group carries
/// the bytes underneath).
template <class Transport = archetype_transport, class F>
auto spawn_archetype(int n, F&& f, gcl::inproc_options opts = {}) {
  return gcl::spawn<gcl::inproc_transport>(
      n,
      [&f](auto& inner) {
        gcl::communicator<Transport> comm(Transport(archetype_transport(inner.transport())));
        return f(comm);
      },
      std::move(opts));
}

}  // namespace gcl_test
