#pragma once
// A network interface's address, by name (GCL_INTERFACE, tcp_options::interface_name).

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>
#include <optional>
#include <string>

#include "../../error.hpp"
#include "asio.hpp"
#include "options.hpp"

namespace gcl::detail {

// The address of a named interface, in the requested family (v4 preferred for `any`).
inline asio::ip::address interface_address(std::string const& name, address_family family) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    throw transport_error(errc::connection_refused, "gcl: cannot list network interfaces");
  std::optional<asio::ip::address> v4, v6;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || name != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET && !v4) {
      auto* s = reinterpret_cast<sockaddr_in const*>(i->ifa_addr);
      asio::ip::address_v4::bytes_type b;
      std::memcpy(b.data(), &s->sin_addr, 4);
      v4 = asio::ip::address_v4(b);
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      auto* s = reinterpret_cast<sockaddr_in6 const*>(i->ifa_addr);
      asio::ip::address_v6::bytes_type b;
      std::memcpy(b.data(), &s->sin6_addr, 16);
      asio::ip::address_v6 a(b, s->sin6_scope_id);
      // A routable address beats a link-local one, which other hosts reach only with a scope.
      if (!v6 || (v6->to_v6().is_link_local() && !a.is_link_local())) v6 = a;
    }
  }
  freeifaddrs(list);
  if (family != address_family::v6 && v4) return *v4;
  if (family != address_family::v4 && v6) return *v6;
  throw transport_error(errc::connection_refused,
                        "gcl: network interface '" + name + "' does not exist or has no " +
                            (family == address_family::v6   ? "IPv6"
                             : family == address_family::v4 ? "IPv4"
                                                            : "IP") +
                            " address (GCL_INTERFACE / tcp_options::interface_name)");
}

}  // namespace gcl::detail
