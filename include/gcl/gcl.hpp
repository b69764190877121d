#pragma once
/// \file
/// Everything of gcl except the TCP transport (include <gcl/transport/tcp.hpp> for that, which
/// needs Boost.Asio), so that the core needs nothing but a C++20 compiler and threads.
///
///     #include <gcl/gcl.hpp>
///     gcl::spawn<gcl::inproc_transport>(4, [](auto& comm) {
///       std::vector<int> v{comm.rank()};
///       gcl::all_reduce(comm, v, gcl::sum{}, gcl::ring{});
///     });

#include "algorithm/automatic.hpp"
#include "algorithm/by_size.hpp"
#include "algorithm/direct.hpp"
#include "algorithm/halving_doubling.hpp"
#include "algorithm/hierarchical.hpp"
#include "algorithm/parameter_server.hpp"
#include "algorithm/recursive_doubling.hpp"
#include "algorithm/ring.hpp"
#include "algorithm/tree.hpp"
#include "calibrate.hpp"
#include "call_info.hpp"
#include "collective/all_gather.hpp"
#include "collective/all_gatherv.hpp"
#include "collective/all_reduce.hpp"
#include "collective/all_to_all.hpp"
#include "collective/all_to_allv.hpp"
#include "collective/barrier.hpp"
#include "collective/broadcast.hpp"
#include "collective/exscan.hpp"
#include "collective/gather.hpp"
#include "collective/gatherv.hpp"
#include "collective/nonblocking.hpp"
#include "collective/reduce.hpp"
#include "collective/reduce_scatter.hpp"
#include "collective/reduce_scatterv.hpp"
#include "collective/scan.hpp"
#include "collective/scatter.hpp"
#include "collective/scatterv.hpp"
#include "communicator.hpp"
#include "concepts.hpp"
#include "cost_model.hpp"
#include "error.hpp"
#include "log.hpp"
#include "nonblocking/request.hpp"
#include "op.hpp"
#include "spawn.hpp"
#include "stats.hpp"
#include "transport/inproc.hpp"
#include "transport_hints.hpp"
#include "version.hpp"
