// tests/peers/local_net.h: an in-memory network for a Host and Peers in one process, each on its own
// thread, so a test can reach into a Peer (its error-feedback residual) and see every message. A
// message or a whole blob goes straight into the other side's inbox, in order; nothing is lost,
// nothing is measured (LinkStats stay empty, so no transfer is ever "still moving"). Every message
// the host sends is also kept for the test to read (sent_by_host). Not a model of a slow link:
// tests of time on the wire use the real stack (test_run.cpp, tests/wan).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "peers/link.h"

namespace arch::test {

class LocalNet {
public:
    static constexpr const char* kHostKey = "host";

    struct Sent {  // one message the host sent
        std::string to;
        protocol::Type type;
        std::vector<std::byte> payload;
    };

    // One side's Link. The host's end sends to any peer by key; a peer's end to the host only.
    class End final : public Link {
    public:
        End(LocalNet& net, std::string self) : net_(net), self_(std::move(self)) {}

        std::optional<LinkEvent> poll(int timeout_ms) override {
            std::unique_lock lock(net_.mutex_);
            std::deque<LinkEvent>& q = net_.inbox_[self_];
            net_.ready_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !q.empty(); });
            if (q.empty()) return std::nullopt;
            LinkEvent e = std::move(q.front());
            q.pop_front();
            if (self_ == kHostKey) {
                ++net_.taken_by_host_[e.type];
                net_.ready_.notify_all();
            }
            if (e.kind == LinkEvent::Kind::message) received_[e.type] += e.payload.size();
            return e;
        }
        bool send(const std::string& to, protocol::Type type, uint64_t round, std::span<const std::byte> payload) override {
            deliver(to, type, round, std::vector<std::byte>(payload.begin(), payload.end()));
            return true;
        }
        bool send_blob(const std::string& to, protocol::Type type, uint64_t round, SharedBlob blob) override {
            deliver(to, type, round, blob->joined());
            return true;
        }
        void forget(const std::string&) override {}  // nothing waits: everything was delivered at once
        uint64_t bytes_sent(protocol::Type type) const override { return value(sent_, type); }
        uint64_t bytes_received(protocol::Type type) const override { return value(received_, type); }

    private:
        static uint64_t value(const std::map<protocol::Type, uint64_t>& m, protocol::Type t) {
            const auto it = m.find(t);
            return it == m.end() ? 0 : it->second;
        }
        void deliver(const std::string& to, protocol::Type type, uint64_t round, std::vector<std::byte> payload) {
            sent_[type] += payload.size();
            std::lock_guard lock(net_.mutex_);
            if (self_ == kHostKey) net_.sent_by_host_.push_back({to, type, payload});
            LinkEvent e;
            e.kind = LinkEvent::Kind::message;
            e.peer = self_;  // the receiver sees the sender's key
            e.type = type;
            e.round = round;
            e.payload = std::move(payload);
            net_.inbox_[self_ == kHostKey ? to : std::string(kHostKey)].push_back(std::move(e));
            net_.ready_.notify_all();
        }

        LocalNet& net_;
        std::string self_;
        std::map<protocol::Type, uint64_t> sent_, received_;
    };

    End& host() { return end(kHostKey); }
    End& peer(const std::string& key) { return end(key); }

    // What the host sent so far (a copy: the host's thread keeps sending).
    std::vector<Sent> sent_by_host() const {
        std::lock_guard lock(mutex_);
        return sent_by_host_;
    }
    std::size_t sent_by_host(protocol::Type type) const {  // how many of that type
        std::lock_guard lock(mutex_);
        return count_sent(type);
    }

    // Waits (at most timeout_s) until the host has sent `count` messages of `type`, or taken that
    // many from its inbox (its thread then handles each before it looks at a deadline).
    bool wait_sent_by_host(protocol::Type type, std::size_t count, double timeout_s) {
        return wait(timeout_s, [&] { return count_sent(type) >= count; });
    }
    bool wait_taken_by_host(protocol::Type type, std::size_t count, double timeout_s) {
        return wait(timeout_s, [&] {
            const auto it = taken_by_host_.find(type);
            return it != taken_by_host_.end() && it->second >= count;
        });
    }

private:
    std::size_t count_sent(protocol::Type type) const {  // under mutex_
        return static_cast<std::size_t>(std::count_if(sent_by_host_.begin(), sent_by_host_.end(),
                                                      [&](const Sent& s) { return s.type == type; }));
    }
    template <typename Ready>
    bool wait(double timeout_s, Ready ready) {
        std::unique_lock lock(mutex_);
        return ready_.wait_for(lock, std::chrono::duration<double>(timeout_s), ready);
    }
    End& end(const std::string& key) {
        std::lock_guard lock(mutex_);
        auto& e = ends_[key];
        if (!e) e = std::make_unique<End>(*this, key);
        return *e;
    }

    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::map<std::string, std::deque<LinkEvent>> inbox_;
    std::map<std::string, std::unique_ptr<End>> ends_;
    std::vector<Sent> sent_by_host_;
    std::map<protocol::Type, std::size_t> taken_by_host_;  // messages the host's poll returned, by type
};

}  // namespace arch::test
