#pragma once
// The parts of Boost.Asio the TCP transport uses, included once, and the names it uses them by.

#include <utility>  // first: some Boost 1.74 Asio headers use std::exchange without it

#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

namespace gcl::detail {

namespace asio = boost::asio;
using asio::ip::tcp;

}  // namespace gcl::detail
