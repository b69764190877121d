#pragma once
// The job's shared memory: one memfd, created by rank 0 and passed to the others over the
// rendezvous socket (shm/rendezvous.hpp). A memfd is anonymous memory, not a file in /dev/shm:
// a full or small /dev/shm (Docker's 64 MiB) does not limit it, so touching it never raises
// SIGBUS, and it vanishes when the last process that maps it ends, however it ends (SIGKILL
// included): there is nothing to clean up.
//
// Layout (every part 64-byte aligned, so that no two writers share a cache line):
//   header      magic, sizes, the setup barrier, the job's abort state
//   ranks[P]    per rank: its futex bell, its pid, its progress (for timeout reports), ended
//   pairs[P*P]  per (sender, receiver): the ring's head and tail, the offer state, the ring
//   shares[P]   per rank, page-aligned: where it stages a message for every peer to read in
//               place (shm_impl::share_with_all; none at P <= 2)
//   pools[P]    per rank, page-aligned: memory it hands out (shm_transport::allocate) and its
//               peers read large messages from where they lie (none unless pool_bytes is set)

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "../../call_info.hpp"
#include "../../error.hpp"
#include "ring.hpp"

namespace gcl::detail {

// Atomics in memory that several processes map work only if they are lock-free (a lock-based
// atomic would take a lock private to each process).
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::int32_t>::is_always_lock_free);

inline constexpr std::uint64_t shm_magic = 0x67636c2d73686d31ull;  // "gcl-shm1"
// 7: 32-byte headers, the call named once per ring (shm_message_extension)
// 8: each rank's CPU at setup (shm_rank_block::start_cpu)
// 9: shm_message::rewinds (a small message may send the next to the ring's next lap)
inline constexpr std::uint32_t shm_version = 9;

// A call_info kept as words, so that another rank reads it without a data race (timeout
// reports read it while its owner may write it), under a sequence counter.
inline constexpr std::size_t call_words = (sizeof(call_info) + 7) / 8;
static_assert(std::is_trivially_copyable_v<call_info>);

struct shm_call_slot {
  std::atomic<std::uint64_t> version{0};  // odd while being written
  std::atomic<std::uint64_t> words[call_words] = {};

  void store(call_info const& c) noexcept {
    std::uint64_t w[call_words] = {};
    std::memcpy(w, &c, sizeof c);
    // Only the owner writes, so the odd version is a plain store. Each word's release store
    // keeps it before the word: a reader that takes a new word then sees the version changed.
    // Without a read-modify-write (a locked instruction, at every collective) and without a
    // standalone fence, which ThreadSanitizer does not model.
    auto const v = version.load(std::memory_order_relaxed);
    version.store(v + 1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < call_words; ++i) words[i].store(w[i], std::memory_order_release);
    version.store(v + 2, std::memory_order_release);
  }
  // The call, or the empty one if the owner keeps writing it (it is only for reports).
  call_info load() const noexcept {
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto v = version.load(std::memory_order_acquire);
      if (v % 2 != 0) continue;
      std::uint64_t w[call_words];
      for (std::size_t i = 0; i < call_words; ++i) w[i] = words[i].load(std::memory_order_acquire);
      if (version.load(std::memory_order_relaxed) != v) continue;
      call_info c;
      std::memcpy(&c, w, sizeof c);
      return c;
    }
    return {};
  }
};

struct shm_header {
  std::uint64_t magic = shm_magic;
  std::uint32_t version = shm_version;
  std::uint32_t size = 0;
  std::uint64_t ring_bytes = 0;
  std::uint64_t pool_bytes = 0;  // of each rank's pool (a multiple of shm_page)
  std::uint64_t total_bytes = 0;
  std::uint64_t stamp_key = 0;  // random, set by rank 0: see shm_message::stamp
  // Setup barrier: every rank has mapped the segment and probed cross-memory attach.
  alignas(64) std::atomic<std::uint32_t> ready{0};
  // The job's abort: 0 none, 1 being written, 2 written (code and reason are then final).
  alignas(64) std::atomic<std::uint32_t> abort_state{0};
  std::uint32_t abort_code = 0;
  char abort_reason[1024] = {};
};

// Yields until `done()` or `deadline` (the clock read every 64 looks); whether `done()`.
template <class Done>
bool yield_until(Done done, std::chrono::steady_clock::time_point deadline) {
  for (unsigned round = 0; !done(); ++round) {
    if (round % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// The job's abort state once its writer is done with it: a state of 1 (being written) is waited
// out, yielding, until `deadline`. The writer is between its claim and its release store for a
// snprintf, but may lose its core there for a time slice or more on a loaded machine; a reader
// that gave up after a count of yields (1,000 before: about a millisecond on an idle core) would
// report that another rank is failing instead of the reason, which names the rank that failed
// first. Still 1 at the deadline: the writer died half-way.
inline std::uint32_t settled_abort_state(std::atomic<std::uint32_t> const& state,
                                         std::chrono::steady_clock::time_point deadline) {
  yield_until([&] { return state.load(std::memory_order_acquire) != 1; }, deadline);
  return state.load(std::memory_order_acquire);
}

struct alignas(64) shm_rank_block {
  // Its bell: a peer that made a change this rank may wait for increments it and wakes the
  // futex, but only when `sleepers` says the rank sleeps (shm/engine.hpp: wait).
  std::atomic<std::uint32_t> bell{0};
  std::atomic<std::uint32_t> sleepers{0};
  // Written by the rank itself, read by the others.
  alignas(64) std::atomic<std::int32_t> pid{0};
  std::atomic<std::uint64_t> probe_address{0};  // where peers try process_vm_readv
  // 1: registered for membarrier's global commands (detail/fence.hpp); when every rank is, a
  // waker's fence is the sleeper's to pay.
  std::atomic<std::uint32_t> light_fences{0};
  std::atomic<std::int32_t> start_cpu{-1};  // where it ran during setup (-1: unknown)
  std::atomic<std::uint32_t> ended{0};      // its transport is gone (its job is over)
  std::atomic<std::uint32_t> in_call{0};
  std::atomic<std::int32_t> waiting_for{-1};
  std::atomic<std::uint64_t> started{0};  // its last collective begun
  shm_call_slot call;                     // that collective
};

struct alignas(64) shm_pair_block {
  alignas(64) std::atomic<std::uint64_t> head{0};  // bytes ever written (by the sender)
  alignas(64) std::atomic<std::uint64_t> tail{0};  // bytes ever consumed (by the receiver)
  // The sender's one outstanding offer (a large message the receiver copies from the sender's
  // memory): idle, posted, being copied, copied, withdrawn (the sender failed meanwhile).
  alignas(64) std::atomic<std::uint32_t> offer_state{0};
  // Set by the receiver at setup: it can read the sender's memory (process_vm_readv works).
  std::atomic<std::uint32_t> pull_ok{0};
  // 1 while the sender waits for room: the receiver then leaves no message in the ring for its
  // receive (shm_impl::parks).
  std::atomic<std::uint32_t> sender_waits{0};
};
enum : std::uint32_t { offer_idle, offer_posted, offer_copying, offer_done, offer_withdrawn };

// Whether [at, at + n) lies within [start, start + size), without overflowing: where a message
// names its bytes in a pool (shm_pool::contains for the sender, shm_impl::pull for the
// receiver, which must not trust the name).
inline constexpr bool lies_within(std::uint64_t start, std::uint64_t size, std::uint64_t at,
                                  std::uint64_t n) noexcept {
  return at >= start && n <= size && at - start <= size - n;
}

// The pools start on a page and take whole pages, so that a rank's buffers there share no
// page (nor cache line) with the rings.
inline constexpr std::size_t shm_page = 4096;
inline constexpr std::size_t round_page(std::size_t n) noexcept {
  return static_cast<std::size_t>(round_up(n, shm_page));
}

// The mapped segment of one job: where each part is.
class shm_segment {
 public:
  shm_segment() = default;
  shm_segment(shm_segment const&) = delete;
  shm_segment& operator=(shm_segment const&) = delete;
  ~shm_segment() {
    if (base_ != nullptr) ::munmap(base_, bytes_);
  }

  // The bytes before the share areas and the pools.
  static std::size_t rings_end(int size, std::size_t ring) noexcept {
    auto const p = static_cast<std::size_t>(size);
    return pairs_offset(size) + p * p * pair_stride(ring);
  }
  // Where the first pair's block starts: after the header and the ranks' blocks, each from a
  // 128-byte boundary.
  static std::size_t pairs_offset(int size) noexcept {
    return round_to_line_pair(sizeof(shm_header)) +
           round_to_line_pair(static_cast<std::size_t>(size) * sizeof(shm_rank_block));
  }
  // A pair's block and its ring, each from a 128-byte boundary.
  static std::size_t pair_stride(std::size_t ring) noexcept {
    return round_to_line_pair(sizeof(shm_pair_block)) + round_to_line_pair(ring);
  }
  // Where rank r's block starts.
  static std::size_t rank_offset(int r) noexcept {
    return round_to_line_pair(sizeof(shm_header)) +
           static_cast<std::size_t>(r) * sizeof(shm_rank_block);
  }
  // Where the block of the pair (from, to) starts; its ring follows it.
  static std::size_t pair_offset(int from, int to, int size, std::size_t ring) noexcept {
    auto const p = static_cast<std::size_t>(size);
    return pairs_offset(size) +
           (static_cast<std::size_t>(from) * p + static_cast<std::size_t>(to)) * pair_stride(ring);
  }
  static std::size_t ring_offset(int from, int to, int size, std::size_t ring) noexcept {
    return pair_offset(from, to, size, ring) + round_to_line_pair(sizeof(shm_pair_block));
  }
  // Each rank's share area: half a ring, which holds a chunk of the ring all_reduce's blocks
  // whole as the ring does (shm.hpp, default_all_reduce), and a page more for the element that
  // makes one chunk longer than the others. None at P <= 2, where a rank has one peer.
  static std::size_t share_bytes_for(int size, std::size_t ring) noexcept {
    return size > 2 ? round_page(ring / 2 + shm_page) : 0;
  }
  // The bytes before the pools: what is mapped with MAP_POPULATE (the share areas are written
  // on every large ring all_reduce).
  static std::size_t shares_end(int size, std::size_t ring) noexcept {
    auto const end = rings_end(size, ring);
    auto const share = share_bytes_for(size, ring);
    if (share == 0) return end;
    return round_page(end) + static_cast<std::size_t>(size) * share;
  }
  static std::size_t bytes_for(int size, std::size_t ring, std::size_t pool) noexcept {
    auto const end = shares_end(size, ring);
    if (pool == 0) return end;
    return round_page(end) + static_cast<std::size_t>(size) * pool;
  }

  // Rank 0: a new memfd of the right size, mapped and initialised. Returns the descriptor (the
  // caller passes it to the other ranks and closes it). `pool`: bytes of each rank's pool, a
  // multiple of shm_page.
  int create(int size, std::size_t ring, std::size_t pool, std::string const& prefix) {
    int fd = ::memfd_create("gcl-shm", MFD_CLOEXEC);
    if (fd < 0)
      throw transport_error(errc::protocol,
                            prefix + "memfd_create failed: " + std::strerror(errno));
    auto const bytes = bytes_for(size, ring, pool);
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      int e = errno;
      ::close(fd);
      throw transport_error(errc::protocol, prefix + "cannot size the shared segment to " +
                                                std::to_string(bytes) +
                                                " bytes: " + std::strerror(e));
    }
    map(fd, bytes, prefix);
    populate(fd, shares_end(size, ring), prefix);
    auto* h = std::construct_at(reinterpret_cast<shm_header*>(base_));
    h->size = static_cast<std::uint32_t>(size);
    h->ring_bytes = ring;
    h->pool_bytes = pool;
    h->total_bytes = bytes;
    std::random_device entropy;  // getrandom on Linux
    // Odd, so no stamp (a position, a multiple of 128, XOR the key) is 0, which a fresh
    // segment holds everywhere.
    h->stamp_key = (std::uint64_t{entropy()} << 32 | entropy()) | 1;
    for (int r = 0; r < size; ++r) std::construct_at(&rank(r));
    for (int s = 0; s < size; ++s)
      for (int d = 0; d < size; ++d) std::construct_at(&pair(s, d));
    return fd;
  }

  // Another rank: maps the descriptor rank 0 sent and checks that it is what rank 0 said.
  void join(int fd, int size, std::string const& prefix) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(shm_header)))
      throw transport_error(errc::protocol, prefix + "rank 0 sent no usable shared segment");
    map(fd, static_cast<std::size_t>(st.st_size), prefix);
    auto const& h = header();
    if (h.magic != shm_magic || h.version != shm_version ||
        h.size != static_cast<std::uint32_t>(size) || h.total_bytes != bytes_ ||
        h.pool_bytes % shm_page != 0 || h.ring_bytes % shm_line_pair != 0 ||
        bytes_for(size, h.ring_bytes, h.pool_bytes) != bytes_)
      throw transport_error(errc::protocol,
                            prefix +
                                "rank 0's shared segment is not of this version of gcl or "
                                "not of a job of " +
                                std::to_string(size) + " ranks");
    populate(fd, shares_end(size, h.ring_bytes), prefix);
  }

  // The mapping of the segment behind `fd` in this process: ranks that are threads of one
  // process share one mapping (one address per atomic, so that ThreadSanitizer sees how they
  // synchronise, and one mapping instead of n). Rank 0 registers what it created; the others
  // map it, or find it mapped.
  static std::shared_ptr<shm_segment> attach(int fd, int size, std::string const& prefix) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
      throw transport_error(errc::protocol, prefix + "rank 0 sent no usable shared segment");
    std::lock_guard lock(registry_mutex());
    auto& known = registry()[{st.st_dev, st.st_ino}];
    if (auto s = known.lock()) return s;
    auto s = std::make_shared<shm_segment>();
    s->join(fd, size, prefix);
    known = s;
    return s;
  }
  static void enroll(int fd, std::shared_ptr<shm_segment> const& s) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    std::lock_guard lock(registry_mutex());
    registry()[{st.st_dev, st.st_ino}] = s;
  }

  shm_header& header() const noexcept { return *reinterpret_cast<shm_header*>(base_); }
  shm_rank_block& rank(int r) const noexcept {
    return *reinterpret_cast<shm_rank_block*>(base_ + rank_offset(r));
  }
  shm_pair_block& pair(int from, int to) const noexcept {
    return *reinterpret_cast<shm_pair_block*>(base_ +
                                              pair_offset(from, to, size(), header().ring_bytes));
  }
  std::byte* ring(int from, int to) const noexcept {
    return base_ + ring_offset(from, to, size(), header().ring_bytes);
  }
  std::size_t ring_bytes() const noexcept { return header().ring_bytes; }
  std::size_t pool_bytes() const noexcept { return header().pool_bytes; }
  // Rank r's pool: pool_bytes() bytes from here.
  std::byte* pool(int r) const noexcept {
    return base_ + round_page(shares_end(size(), ring_bytes())) +
           static_cast<std::size_t>(r) * pool_bytes();
  }
  std::size_t share_bytes() const noexcept { return share_bytes_for(size(), ring_bytes()); }
  // Rank r's share area: share_bytes() bytes from here.
  std::byte* share(int r) const noexcept {
    return base_ + round_page(rings_end(size(), ring_bytes())) +
           static_cast<std::size_t>(r) * share_bytes();
  }
  // Where `p` lies in the segment (for a message that names a place in a pool).
  std::uint64_t offset_of(std::byte const* p) const noexcept {
    return static_cast<std::uint64_t>(p - base_);
  }
  std::byte* at(std::uint64_t offset) const noexcept { return base_ + offset; }
  int size() const noexcept { return static_cast<int>(header().size); }

 private:
  static std::mutex& registry_mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<shm_segment>>& registry() {
    static std::map<std::pair<dev_t, ino_t>, std::weak_ptr<shm_segment>> r;
    return r;
  }
  // MAP_POPULATE: every page is in place before the first message. Otherwise each page of a
  // ring faults (allocated, zeroed, mapped in each process) the first time the ring's head
  // passes it: measured at P = 2 (4-byte all_reduce, 20,000 calls back to back, 1 MiB rings),
  // a mean per call of 0.6-2.3 us over the first pass against a median of 0.4 (with 16 KiB
  // rings, touched within the first calls, the mean was the median). The rings are about
  // 2 MiB per rank. The pools are not populated: a page of one takes memory only once its
  // owner writes it (the user's buffer), and a peer maps it on its first read.
  void map(int fd, std::size_t bytes, std::string const& prefix) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
      throw transport_error(errc::protocol, prefix + "cannot map the shared segment (" +
                                                std::to_string(bytes) +
                                                " bytes): " + std::strerror(errno));
    base_ = static_cast<std::byte*>(p);
    bytes_ = bytes;
  }
  // Maps the first n bytes again, in place, with MAP_POPULATE: the header, the rings and the
  // share areas.
  void populate(int fd, std::size_t n, std::string const& prefix) {
    n = std::min(n, bytes_);
    if (::mmap(base_, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0) ==
        MAP_FAILED)
      throw transport_error(errc::protocol, prefix + "cannot map the shared segment's rings (" +
                                                std::to_string(n) +
                                                " bytes): " + std::strerror(errno));
  }
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace gcl::detail
