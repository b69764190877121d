#pragma once
// A transport decorator for the tree and ring tests: records, per rank, the peer and the first
// element of every message it sends, so a test can check the schedule the algorithm really
// runs against the homework's formulas (not just the formula functions).

#include <gcl/communicator.hpp>
#include <gcl/transport/inproc.hpp>

#include <cstring>
#include <functional>
#include <span>
#include <thread>
#include <vector>

namespace recording {

struct sent {
  int peer;
  std::size_t bytes;
  double first;  // the first element, as double (elements are int64 in these tests)
};

class transport {
 public:
  transport(gcl::inproc_transport inner, std::vector<sent>* log)
      : inner_(std::move(inner)), log_(log) {}
  int rank() const noexcept { return inner_.rank(); }
  int size() const noexcept { return inner_.size(); }
  void set_call(gcl::call_info const& c) { inner_.set_call(c); }
  void end_context(std::uint32_t context) { inner_.end_context(context); }
  void send(int peer, gcl::tag tg, std::span<std::byte const> out) {
    std::int64_t first = 0;
    if (out.size() >= sizeof first) std::memcpy(&first, out.data(), sizeof first);
    log_->push_back({peer, out.size(), static_cast<double>(first)});
    inner_.send(peer, tg, out);
  }
  void recv(int peer, gcl::tag tg, std::span<std::byte> in) { inner_.recv(peer, tg, in); }

 private:
  gcl::inproc_transport inner_;
  std::vector<sent>* log_;
};

/// Runs f(comm) on p threads over recording transports; returns each rank's log.
template <class F>
std::vector<std::vector<sent>> run(int p, F f) {
  std::vector<std::vector<sent>> logs(static_cast<std::size_t>(p));
  gcl::inproc_transport::group g(p);
  {
    std::vector<std::jthread> threads;
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        gcl::communicator<transport> comm(transport(g.connect(r), &logs[r]));
        f(comm);
      });
  }
  return logs;
}

}  // namespace recording
