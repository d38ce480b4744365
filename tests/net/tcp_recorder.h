// tests/net/tcp_recorder.h: a TCP relay on 127.0.0.1 that records every byte it forwards, so a
// test can inspect what actually went over the wire (a loopback capture without tcpdump).
// One thread; relays any number of successive connections; stop() or the destructor ends it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace arch::net::test {

class TcpRecorder {
  public:
    explicit TcpRecorder(uint16_t target_port) : target_port_(target_port) {
        listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
            ::listen(listener_, 8) != 0)
            throw std::runtime_error("recorder: cannot listen");
        socklen_t len = sizeof(addr);
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { run(); });
    }
    ~TcpRecorder() { stop(); }

    uint16_t port() const { return port_; }
    std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }

    void stop() {
        if (!thread_.joinable()) return;
        stopping_ = true;
        thread_.join();
        ::close(listener_);
    }
    std::vector<std::byte> recorded() const {  // both directions, in forwarding order
        std::lock_guard<std::mutex> lock(mutex_);
        return bytes_;
    }
    std::size_t recorded_size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return bytes_.size();
    }
    // Drop every relayed connection now (both ends see it close).
    void cut() { cut_ = true; }
    // Stop forwarding without closing anything, as a dead host or a pulled cable would look;
    // only heartbeats can tell. resume() forwards again.
    void freeze() { frozen_ = true; }
    void resume() { frozen_ = false; }

  private:
    struct Pair {
        int client = -1, server = -1;
    };

    int connect_target() const {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(target_port_);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
            ::close(fd);
            return -1;
        }
        return fd;
    }

    static void close_pair(Pair& p) {
        ::close(p.client);
        ::close(p.server);
        p.client = p.server = -1;
    }

    void run() {
        std::vector<Pair> pairs;
        std::vector<std::byte> buffer(1 << 16);
        while (!stopping_) {
            if (cut_.exchange(false))
                for (auto& p : pairs) close_pair(p);
            std::erase_if(pairs, [](const Pair& p) { return p.client < 0; });
            std::vector<pollfd> fds{{listener_, POLLIN, 0}};
            for (const auto& p : pairs) {
                if (frozen_) break;
                fds.push_back({p.client, POLLIN, 0});
                fds.push_back({p.server, POLLIN, 0});
            }
            if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
            if (fds[0].revents & POLLIN) {
                const int client = ::accept(listener_, nullptr, nullptr);
                const int server = client >= 0 ? connect_target() : -1;
                if (server >= 0)
                    pairs.push_back({client, server});
                else if (client >= 0)
                    ::close(client);
            }
            const std::size_t polled = (fds.size() - 1) / 2;  // pairs in fds (none while frozen)
            for (std::size_t i = 0; i < polled; ++i) {
                for (int side = 0; side < 2; ++side) {
                    const auto& pfd = fds[1 + 2 * i + static_cast<std::size_t>(side)];
                    if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
                    const int from = side == 0 ? pairs[i].client : pairs[i].server;
                    const int to = side == 0 ? pairs[i].server : pairs[i].client;
                    if (from < 0) continue;
                    const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
                    if (n > 0) {  // record before forwarding: whatever the far end got is recorded
                        std::lock_guard<std::mutex> lock(mutex_);
                        bytes_.insert(bytes_.end(), buffer.begin(), buffer.begin() + n);
                    }
                    if (n <= 0 || !send_all(to, buffer.data(), static_cast<std::size_t>(n)))
                        close_pair(pairs[i]);
                }
            }
        }
        for (auto& p : pairs)
            if (p.client >= 0) close_pair(p);
    }

    static bool send_all(int fd, const std::byte* data, std::size_t size) {
        while (size > 0) {
            const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
            if (n <= 0) return false;
            data += n;
            size -= static_cast<std::size_t>(n);
        }
        return true;
    }

    uint16_t target_port_;
    uint16_t port_ = 0;
    int listener_ = -1;
    std::atomic<bool> stopping_{false};
    std::atomic<bool> cut_{false};
    std::atomic<bool> frozen_{false};
    mutable std::mutex mutex_;
    std::vector<std::byte> bytes_;
    std::thread thread_;
};

}  // namespace arch::net::test
