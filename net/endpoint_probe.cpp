// net/endpoint_probe.cpp: a TCP connect to each of a host's endpoints in turn (endpoint_probe.h).
#include "net/endpoint_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "net/endpoint.h"

namespace arch::net {
namespace {

// "" when a TCP connection to HOST:PORT opened within timeout_ms, else why not.
std::string try_connect(const std::string& endpoint, int timeout_ms) {
    const std::optional<TcpEndpoint> at = split_tcp_endpoint(endpoint);
    if (!at) return "not tcp://HOST:PORT";
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (const int e = ::getaddrinfo(at->host.c_str(), at->port.c_str(), &hints, &found); e != 0) return gai_strerror(e);
    std::string why = "no address";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (addrinfo* a = found; a; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        int error = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
        if (error == EINPROGRESS) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
            if (::poll(&p, 1, static_cast<int>(std::max<long long>(0, left.count()))) == 1) {
                socklen_t length = sizeof(error);
                if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
            } else {
                error = ETIMEDOUT;
            }
        }
        ::close(fd);
        if (error == 0) {
            ::freeaddrinfo(found);
            return "";
        }
        why = std::strerror(error);
    }
    ::freeaddrinfo(found);
    return why;
}

}  // namespace

ProbeResult first_reachable(const std::vector<std::string>& endpoints, int timeout_ms) {
    ProbeResult r;
    for (const std::string& e : endpoints) {
        const std::string why = try_connect(e, timeout_ms);
        if (why.empty()) {
            r.reached = e;
            return r;
        }
        r.failed.push_back(e + ": " + why);
    }
    return r;
}

}  // namespace arch::net
