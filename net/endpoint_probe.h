// net/endpoint_probe.h: which of a host's addresses a peer can reach. An invite may list several (the
// router's mapped address, the LAN's, a global IPv6); the peer tries them in order with a plain TCP
// connect, each bounded in time, and joins through the first that answers.
#pragma once

#include <string>
#include <vector>

namespace arch::net {

struct ProbeResult {
    std::string reached;              // the first endpoint that accepted a TCP connection; empty: none
    std::vector<std::string> failed;  // "ENDPOINT: why", for each tried before it
};

// endpoints: "tcp://HOST:PORT" (HOST a name, an IPv4 address or [IPv6]); each gets at most timeout_ms.
ProbeResult first_reachable(const std::vector<std::string>& endpoints, int timeout_ms);

}  // namespace arch::net
