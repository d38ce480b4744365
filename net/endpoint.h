// net/endpoint.h: "tcp://HOST:PORT" taken apart (HOST a name, an IPv4 address or [IPv6]), for the
// invite's check, the peer's probe of a host's addresses and the host's port mapping.
#pragma once

#include <optional>
#include <string>

namespace arch::net {

struct TcpEndpoint {
    std::string host;  // without the brackets of an IPv6 address
    std::string port;  // digits, 1..65535
};

// nullopt unless `endpoint` is tcp://HOST:PORT with a nonempty HOST, a port in 1..65535 and no blank.
std::optional<TcpEndpoint> split_tcp_endpoint(const std::string& endpoint);

// What run.bind is for every IPv4 address of the host, before the port.
inline constexpr const char* kEveryIpv4 = "tcp://0.0.0.0:";

}  // namespace arch::net
