// tests/net/net_fixture.h: shared pieces for the net/ tests: a host and peers with fresh keys on an
// ephemeral 127.0.0.1 port, a thread-safe log that tests can wait on, and deadline-based waiting.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "net/host_socket.h"
#include "net/peer_socket.h"

namespace arch::net::test {

// Collects log lines from any thread.
class LogSink {
  public:
    LogFn fn(const std::string& prefix) {
        return [this, prefix](const std::string& line) {
            std::lock_guard<std::mutex> lock(mutex_);
            lines_.push_back(prefix + line);
        };
    }
    bool contains(const std::string& needle) const {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& line : lines_)
            if (line.find(needle) != std::string::npos) return true;
        return false;
    }
    int count(const std::string& needle) const {
        std::lock_guard<std::mutex> lock(mutex_);
        int n = 0;
        for (const auto& line : lines_) n += line.find(needle) != std::string::npos;
        return n;
    }
    std::string all() const {
        std::lock_guard<std::mutex> lock(mutex_);
        std::string text;
        for (const auto& line : lines_) text += line + "\n";
        return text;
    }

  private:
    mutable std::mutex mutex_;
    std::vector<std::string> lines_;
};

// Short limits so that failures show within a test's patience.
inline Limits test_limits() {
    Limits limits;
    limits.max_message_bytes = 4 << 20;
    limits.handshake_ivl_ms = 2000;
    limits.heartbeat_ivl_ms = 200;
    limits.heartbeat_timeout_ms = 1000;
    limits.heartbeat_ttl_ms = 2000;
    limits.reconnect_ivl_ms = 50;
    limits.reconnect_ivl_max_ms = 400;
    limits.linger_ms = 0;
    limits.send_timeout_ms = 2000;
    return limits;
}

constexpr uint64_t kRunId = 0x1122334455667788ull;

inline HostSocketOptions host_options(const KeyPair& host_keys, const AllowList& allow, LogSink& log) {
    HostSocketOptions o;
    o.keys = host_keys;
    o.allow = allow;
    o.run_id = kRunId;
    o.limits = test_limits();
    o.log = log.fn("");
    return o;
}

inline PeerSocketOptions peer_options(const std::string& endpoint, const std::string& host_key,
                                const KeyPair& keys, LogSink& log) {
    PeerSocketOptions o;
    o.host_endpoint = endpoint;
    o.host_public_key = host_key;
    o.keys = keys;
    o.run_id = kRunId;
    o.limits = test_limits();
    o.log = log.fn("");
    return o;
}

// Polls `step` until it returns true or the deadline passes; returns whether it did.
inline bool wait_for(const std::function<bool()>& step, int timeout_ms = 10000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline)
        if (step()) return true;
    return false;
}

// Polls the host until a message arrives (events are skipped); nullopt at the deadline.
inline std::optional<Incoming> next_message(HostSocket& host, int timeout_ms = 10000) {
    std::optional<Incoming> found;
    wait_for(
        [&] {
            auto in = host.poll(50);
            if (in && in->kind == Incoming::Kind::message) found = std::move(in);
            return found.has_value();
        },
        timeout_ms);
    return found;
}

inline std::optional<Incoming> next_message(PeerSocket& peer, int timeout_ms = 10000) {
    std::optional<Incoming> found;
    wait_for(
        [&] {
            auto in = peer.poll(50);
            if (in && in->kind == Incoming::Kind::message) found = std::move(in);
            return found.has_value();
        },
        timeout_ms);
    return found;
}

// A fresh temporary folder, removed at scope exit.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "arch-net-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace arch::net::test
