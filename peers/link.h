// peers/link.h: what the host and the peer daemon need from the network, in the run protocol's
// terms: small messages, large blobs (chunked, checksummed, resumable transfers underneath), and
// connection events. peers/net_link.cpp implements it over net/ (ZeroMQ CURVE); tests may drive a
// Host or Peer through it directly.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "peers/protocol.h"

namespace arch {

struct LinkEvent {
    enum class Kind { message, connected, disconnected };
    Kind kind = Kind::message;
    std::string peer;  // the other side's authenticated public key (Z85)
    protocol::Type type = protocol::Type::hello;
    uint64_t round = 0;
    std::vector<std::byte> payload;  // a whole message or a whole reassembled blob
};

class Link {
public:
    virtual ~Link() = default;
    virtual std::optional<LinkEvent> poll(int timeout_ms) = 0;
    // Small control messages. Returns false if the other side is not reachable now.
    virtual bool send(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> payload) = 0;
    // Large payloads: delivered whole to the other side's poll() as one message event, or not at all.
    virtual void send_blob(const std::string& peer, protocol::Type type, uint64_t round,
                           std::span<const std::byte> blob) = 0;
    // Drops everything still queued for a peer (it restarted: what was queued is stale).
    virtual void forget(const std::string& peer) = 0;
    // Bytes sent and received so far, by protocol type (transfers counted under their blob's type).
    virtual uint64_t bytes_sent(protocol::Type type) const = 0;
    virtual uint64_t bytes_received(protocol::Type type) const = 0;
};

}  // namespace arch
