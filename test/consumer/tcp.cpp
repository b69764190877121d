// Compiles only if gcl::tcp carries gcl's and Boost.Asio's include directories. The TCP header
// comes first, as a user would write it: it must compile on its own (Boost 1.74's Asio needs
// <utility> included before it under C++20, which the header takes care of).
#include <gcl/transport/tcp.hpp>

#include <boost/asio/io_context.hpp>
#include <gcl/gcl.hpp>

#include <cstdio>

static_assert(gcl::transport<gcl::tcp_transport>);

int main() {
  boost::asio::io_context io;
  std::printf("consumer_tcp: gcl %d with Boost.Asio: OK\n", gcl::version);
}
