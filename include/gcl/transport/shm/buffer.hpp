#pragma once
/// \file
/// `gcl::shm_buffer<T>`: an array in a shared-memory job's pool, which every rank of the job
/// has mapped, so that a large message sent from it is read by its receiver where it lies (one
/// copy, at memcpy's speed) instead of streamed through a ring (two). From
/// `shm_transport::allocate<T>(n)` or `hybrid_transport::allocate<T>(n)`; doc/shm.md, "Buffers
/// in the pool".

#include <cstddef>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "../../error.hpp"
#include "pool.hpp"

namespace gcl {

/// n elements of T in this rank's pool, value-initialised, 64-byte aligned; given back to the
/// pool when destroyed. Move-only. The memory stays mapped while the buffer lives, also after
/// its transport is gone (it is then ordinary memory). Memory that did not come from a pool
/// (`hybrid_transport` with no peer on this host) is ordinary heap memory.
///
///     auto grads = transport.allocate<float>(n);   // before the communicator takes it
///     gcl::all_reduce(comm, grads, gcl::sum{});    // a contiguous range like any other
template <class T>
class shm_buffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "messages are bytes: T must be trivially copyable");
  static_assert(alignof(T) <= detail::shm_pool::alignment);

 public:
  using value_type = T;
  using element_type = T;
  using iterator = T*;
  using const_iterator = T const*;

  shm_buffer() = default;
  shm_buffer(shm_buffer&& o) noexcept
      : pool_(std::move(o.pool_)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  shm_buffer& operator=(shm_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::move(o.pool_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~shm_buffer() { reset(); }

  T* data() noexcept { return data_; }
  T const* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  T const* begin() const noexcept { return data_; }
  T const* end() const noexcept { return data_ + size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  T const& operator[](std::size_t i) const noexcept { return data_[i]; }
  operator std::span<T>() noexcept { return {data_, size_}; }
  operator std::span<T const>() const noexcept { return {data_, size_}; }
  /// Whether the elements lie in a pool that the job's other ranks read in place.
  bool in_pool() const noexcept { return pool_ != nullptr; }

  /// From the pool when `pool` is not null (throws usage_error when it has no room), else from
  /// the heap.
  static shm_buffer make(std::shared_ptr<detail::shm_pool> pool, std::size_t n) {
    shm_buffer b;
    if (n == 0) return b;
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw usage_error("gcl: shm_transport::allocate(" + std::to_string(n) + " elements of " +
                        std::to_string(sizeof(T)) + " bytes): more bytes than memory has");
    std::byte* p = pool ? pool->allocate(n * sizeof(T))
                        : static_cast<std::byte*>(::operator new (
                              n * sizeof(T), std::align_val_t{detail::shm_pool::alignment}));
    b.pool_ = std::move(pool);
    b.data_ = reinterpret_cast<T*>(p);
    b.size_ = n;
    std::uninitialized_value_construct_n(b.data_, n);
    return b;
  }

 private:
  void reset() noexcept {
    if (data_ == nullptr) return;
    auto* p = reinterpret_cast<std::byte*>(data_);
    if (pool_)
      pool_->release(p);
    else
      ::operator delete (p, std::align_val_t{detail::shm_pool::alignment});
    pool_.reset();
    data_ = nullptr;
    size_ = 0;
  }

  std::shared_ptr<detail::shm_pool> pool_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gcl
