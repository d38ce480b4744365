// net/endpoint.cpp: split_tcp_endpoint (endpoint.h).
#include "net/endpoint.h"

namespace arch::net {

std::optional<TcpEndpoint> split_tcp_endpoint(const std::string& endpoint) {
    const std::string scheme = "tcp://";
    const std::size_t colon = endpoint.rfind(':');
    if (!endpoint.starts_with(scheme) || colon == std::string::npos || colon <= scheme.size() ||
        endpoint.find_first_of(" \t\r\n") != std::string::npos)
        return std::nullopt;
    TcpEndpoint e{endpoint.substr(scheme.size(), colon - scheme.size()), endpoint.substr(colon + 1)};
    if (e.port.empty() || e.port.size() > 5 || e.port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    if (const unsigned long p = std::stoul(e.port); p < 1 || p > 65535) return std::nullopt;
    if (e.host.size() >= 2 && e.host.front() == '[' && e.host.back() == ']') e.host = e.host.substr(1, e.host.size() - 2);
    return e;
}

}  // namespace arch::net
