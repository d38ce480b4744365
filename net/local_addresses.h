// net/local_addresses.h: this machine's addresses that peers elsewhere might dial: its IPv4 addresses
// other than loopback, then its global IPv6 addresses (not loopback, link-local or unique-local).
// `archipelago invite` lists them after the router's mapped address (docs/net.md, "Hosting from home").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arch::net {

// "tcp://A.B.C.D:PORT" and "tcp://[V6]:PORT", IPv4 first, each in the order the kernel lists them.
std::vector<std::string> local_endpoints(uint16_t port);

}  // namespace arch::net
