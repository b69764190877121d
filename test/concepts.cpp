#define BOOST_TEST_MODULE concepts
#include <boost/test/unit_test.hpp>

#include <gcl/communicator.hpp>
#include <gcl/concepts.hpp>
#include <gcl/op.hpp>
#include <gcl/transport/inproc.hpp>

#include <array>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace {

// The smallest transport a user could write: one rank that talks to itself, nothing optional.
// Messages are FIFO per tag; a recv of the wrong size throws, as the concept requires.
class loopback {
 public:
  int rank() const { return 0; }
  int size() const { return 1; }
  void send(int, gcl::tag tg, std::span<std::byte const> out) {
    ++sends;
    queues[static_cast<std::uint32_t>(tg)].emplace_back(out.begin(), out.end());
  }
  void recv(int, gcl::tag tg, std::span<std::byte> in) {
    ++recvs;
    auto& q = queues[static_cast<std::uint32_t>(tg)];
    if (q.empty()) throw gcl::transport_error(gcl::errc::timeout, "loopback: nothing queued");
    if (q.front().size() != in.size())
      throw gcl::transport_error(gcl::errc::mismatch, "loopback: size");
    if (!in.empty()) std::memcpy(in.data(), q.front().data(), in.size());
    q.pop_front();
  }
  int sends = 0, recvs = 0;

 private:
  std::map<std::uint32_t, std::deque<std::vector<std::byte>>> queues;
};

struct not_a_transport {  // recv missing
  int rank() const { return 0; }
  int size() const { return 1; }
  void send(int, gcl::tag, std::span<std::byte const>) {}
};

struct my_algorithm {
  static constexpr std::string_view name = "mine";
  static constexpr bool needs_commutative = false;
  int option = 0;
};
struct nameless_algorithm {
  [[maybe_unused]] static constexpr bool needs_commutative = false;  // only looked at (clang warns)
};

struct pod {
  int a;
  float b;
};

}  // namespace

static_assert(gcl::transport<loopback>);
static_assert(!gcl::call_aware_transport<loopback> && !gcl::sendrecv_transport<loopback> &&
              !gcl::irecv_transport<loopback>);
static_assert(!gcl::transport<not_a_transport>);
static_assert(gcl::transport<gcl::inproc_transport> &&
              gcl::call_aware_transport<gcl::inproc_transport> &&
              gcl::sendrecv_transport<gcl::inproc_transport> &&
              gcl::irecv_transport<gcl::inproc_transport>);

static_assert(gcl::sendable_value<int> && gcl::sendable_value<pod> &&
              gcl::sendable_value<double const>);
static_assert(!gcl::sendable_value<std::vector<int>> && !gcl::sendable_value<std::string>);
static_assert(gcl::sendable_range<std::vector<float>> && gcl::sendable_range<std::array<pod, 3>>);
static_assert(gcl::sendable_range<std::span<int const>> && gcl::sendable_range<std::string>);
static_assert(!gcl::sendable_range<std::list<int>>);            // not contiguous
static_assert(!gcl::sendable_range<std::vector<std::string>>);  // not trivially copyable
static_assert(!gcl::sendable<std::vector<std::vector<int>>>);
static_assert(gcl::sendable<int> && gcl::sendable<std::vector<int>>);

static_assert(gcl::algorithm<my_algorithm> && !gcl::algorithm<nameless_algorithm> &&
              !gcl::algorithm<int>);
static_assert(gcl::reduction_op<decltype([](int a, int b) { return a - b; }), int>);
static_assert(!gcl::reduction_op<decltype([](int a) { return a; }), int>);

// The communicator works on a transport with no optional members: sendrecv falls back to
// send then recv (safe because send is eager), irecv is deferred to wait().
BOOST_AUTO_TEST_CASE(communicator_on_a_minimal_transport) {
  gcl::communicator<loopback> comm(loopback{});
  BOOST_TEST(comm.rank() == 0);
  BOOST_TEST(comm.size() == 1);

  std::vector<int> out{1, 2, 3}, in(3);
  comm.sendrecv(0, out, 0, in);
  BOOST_TEST(in == out, boost::test_tools::per_element());
  BOOST_TEST(comm.transport().sends == 1);
  BOOST_TEST(comm.transport().recvs == 1);

  pod p{};
  auto r = comm.irecv(0, p, gcl::tag{5});
  BOOST_TEST(comm.transport().recvs == 1);  // deferred: nothing received yet
  comm.isend(0, pod{7, 2.5f}, gcl::tag{5}).wait();
  BOOST_TEST(r.test());  // receives now
  BOOST_TEST(p.a == 7);
  BOOST_TEST(p.b == 2.5f);

  comm.send(0, 42, gcl::tag{9});
  BOOST_TEST(comm.recv<int>(0, gcl::tag{9}) == 42);
}

BOOST_AUTO_TEST_CASE(communicator_checks_peers_and_tags) {
  gcl::communicator<loopback> comm(loopback{});
  BOOST_CHECK_THROW(comm.send(1, 5), gcl::usage_error);
  BOOST_CHECK_THROW(comm.send(-1, 5), gcl::usage_error);
  int x = 0;
  BOOST_CHECK_THROW(comm.recv(1, x), gcl::usage_error);
  BOOST_CHECK_EXCEPTION(
      comm.send(0, 5, gcl::tag{gcl::tag_user_limit}), gcl::usage_error,
      [](auto const& e) { return std::string(e.what()).find("reserved") != std::string::npos; });
  BOOST_TEST(comm.transport().sends == 0);  // nothing was sent
}

BOOST_AUTO_TEST_CASE(begin_call_numbers_collectives) {
  gcl::communicator<loopback> comm(loopback{});
  BOOST_TEST(comm.collective_count() == 0u);
  {
    auto scope =
        comm.begin_call(gcl::make_call_info<int>(gcl::call_kind::barrier, 0, -1, "", "tree"));
    comm.send(0, 1, gcl::detail::collective_tag);  // reserved tags are allowed inside a call
    comm.recv<int>(0, gcl::detail::collective_tag);
  }
  BOOST_TEST(comm.collective_count() == 1u);
  BOOST_CHECK_THROW(comm.send(0, 1, gcl::detail::collective_tag),
                    gcl::usage_error);  // outside again
}
