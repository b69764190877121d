// Compiles only if gcl::tcp carries gcl's and Boost.Asio's include directories.
//
// <utility> first: Boost 1.74's boost/asio/awaitable.hpp uses std::exchange without including
// <utility>, which g++ 12 in C++20 mode rejects. Until <gcl/transport/tcp.hpp> includes
// <utility> before <boost/asio.hpp> itself, a user must do this too.
#include <utility>

#include <gcl/transport/tcp.hpp>

#include <boost/asio/io_context.hpp>
#include <gcl/gcl.hpp>

#include <cstdio>

static_assert(gcl::transport<gcl::tcp_transport>);

int main() {
  boost::asio::io_context io;
  std::printf("consumer_tcp: gcl %d with Boost.Asio: OK\n", gcl::version);
}
