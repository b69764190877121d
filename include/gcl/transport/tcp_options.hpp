#pragma once
/// \file
/// `gcl::tcp_options` alone, without Boost: see transport/tcp/options.hpp. Kept so that
/// programs that parse their options before including Asio keep their include.

#include "tcp/options.hpp"
