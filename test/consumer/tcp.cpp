// Compiles only if gcl::tcp carries gcl's and Boost.Asio's include directories.
#if __has_include(<gcl/transport/tcp.hpp>)
#include <gcl/transport/tcp.hpp>
#endif
#include <boost/asio/io_context.hpp>
#include <gcl/gcl.hpp>

#include <cstdio>

int main() {
  boost::asio::io_context io;
  std::printf("consumer_tcp: gcl %d with Boost.Asio: OK\n", gcl::version);
}
