// tests/control/http_test_util.h: what the control API tests share: a raw HTTP exchange over a
// plain socket (for requests no well-behaved client sends: oversized, malformed), a JSON field
// checker on nlohmann::json, and a poll loop with a deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace arch::test {

// Sends bytes as-is to 127.0.0.1:port and returns everything the server answers until it closes
// (or timeout_s passes).
inline std::string raw_http(int port, const std::string& bytes, double timeout_s = 10) {
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        ::close(s);
        return "";
    }
    (void)::send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    char buf[4096];
    while (std::chrono::steady_clock::now() < end) {
        pollfd p{s, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = ::recv(s, buf, sizeof(buf), 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(s);
    return out;
}

inline int raw_status(const std::string& reply) {
    // "HTTP/1.1 413 Payload Too Large"
    if (reply.size() < 12 || reply.compare(0, 5, "HTTP/") != 0) return -1;
    return std::stoi(reply.substr(9, 3));
}

// o has the field key and it is of the kind asked: has(status, "round", &nlohmann::json::is_number_integer).
inline bool has(const nlohmann::json& o, const std::string& key, bool (nlohmann::json::*is_kind)() const noexcept) {
    const auto v = o.find(key);
    return v != o.end() && ((*v).*is_kind)();
}

// Calls check until it returns true or timeout_s passes; returns its last answer.
inline bool eventually(const std::function<bool()>& check, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
        if (check()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return check();
}

}  // namespace arch::test
