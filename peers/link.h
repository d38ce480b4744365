// peers/link.h: what the host and the peer daemon need from the network, in the run protocol's
// terms: small messages, large blobs (chunked, checksummed, resumable transfers underneath), and
// connection events. peers/net_link.cpp implements it over net/ (ZeroMQ CURVE); tests may drive a
// Host or Peer through it directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/clock.h"
#include "peers/blob.h"
#include "peers/protocol.h"

namespace arch {

struct LinkEvent {
    enum class Kind { message, connected, disconnected, refused };  // refused: the host refused our key
    Kind kind = Kind::message;
    std::string peer;  // the other side's authenticated public key (Z85)
    protocol::Type type = protocol::Type::hello;
    uint64_t round = 0;
    std::vector<std::byte> payload;  // a whole message or a whole reassembled blob
    // A blob: from its first chunk to its last, by this side's clock. The first chunk's bytes are the
    // blob's (they must match its digest), so the time before it was not spent on the wire.
    double transfer_seconds = 0;
    double since_begin_seconds = 0;  // a blob: from its begin (its first try, after a reconnect) to its last chunk
};

// What this side has measured of its link to one peer, by its own clock.
struct LinkStats {
    uint64_t bytes_sent = 0, bytes_received = 0;  // every frame to / from it: header and payload
    double send_bytes_per_s = 0;     // blobs it received from us, recent ones weighted most (0: none yet)
    double receive_bytes_per_s = 0;  // blobs we received from it
    uint64_t sending = 0, receiving = 0;  // bytes of the transfer to / from it under way (0: none)
    uint64_t sent = 0, received = 0;      // of those, the bytes that reached the other side so far
    // Times on the real clock (Clock::real()): a link measures the wire, not a test's ManualClock.
    Clock::time_point sending_since{}, receiving_since{};  // when that transfer began
    // The last payload that moved: a chunk it sent that was new to us, or its credit or done for a
    // chunk of ours. A begin, a status or a refused message is not progress (docs/net.md).
    Clock::time_point last_progress{};
    // Its newest connection, as the host's kernel sees it (net::Incoming::from, to; empty on a peer).
    std::string came_from, came_in_on;
};

class Link {
public:
    virtual ~Link() = default;
    virtual std::optional<LinkEvent> poll(int timeout_ms) = 0;
    // Small control messages. Returns false if the other side is not reachable now.
    virtual bool send(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> payload) = 0;
    // Large payloads: delivered whole to the other side's poll() as one message event, or not at all.
    // The same blob already queued for that peer is not queued twice, and a state replaces an older
    // state queued for it (a transfer under way is aborted). Returns false, queuing nothing, when the peer already has as many blobs queued as
    // a peer may (it is too far behind: the caller sends it the state instead).
    virtual bool send_blob(const std::string& peer, protocol::Type type, uint64_t round, SharedBlob blob) = 0;
    // Takes a blob off every peer's queue (a transfer under way is aborted), so that it can be freed.
    virtual void withdraw(const SharedBlob& blob) {}
    // Which blob types this side takes, and the most bytes each may declare; a transfer of another
    // type, or larger, is refused before anything is allocated. Never called: everything is taken;
    // an empty map: nothing is.
    virtual void accept_blobs(const std::map<protocol::Type, uint64_t>& max_bytes) {}
    // Transfer messages that cost work without carrying payload (a begin, and any message the transfer
    // refuses) are charged to their sender: `within(peer)` false drops the message unread and unlogged.
    // Never called: nothing is charged.
    virtual void charge_transfers(std::function<bool(const std::string& peer)> within) {}
    // Drops everything still queued for a peer, and what it was sending (it restarted or left: all of
    // it is stale).
    virtual void forget(const std::string& peer) = 0;
    // Drops what is queued for a peer (a transfer under way is aborted), and nothing it is sending: a
    // peer too far behind gets the state instead, and its pseudo-gradient still arrives.
    virtual void drop_queue(const std::string& peer) { forget(peer); }
    // Bytes sent and received so far, by protocol type (transfers counted under their blob's type).
    virtual uint64_t bytes_sent(protocol::Type type) const = 0;
    virtual uint64_t bytes_received(protocol::Type type) const = 0;
    virtual LinkStats stats(const std::string& peer) const { return {}; }
    // A delivered blob's memory, once its reader is done with it: the next blob to arrive may be
    // written in it (pages the process has already, none for the kernel to clear). Never called: each
    // blob arrives in fresh memory.
    virtual void give_back(std::vector<std::byte>&& blob) {}
};

}  // namespace arch
