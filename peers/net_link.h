// peers/net_link.h: Link over net/: HostLink wraps a HostSocket, PeerLink a PeerSocket. Blobs go
// through net/transfer.h (chunks with checksums and credit, resumed after a reconnect); everything
// queued for one peer leaves in order, so a round_start never overtakes the update before it.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "core/clock.h"
#include "net/host_socket.h"
#include "net/peer_socket.h"
#include "net/transfer.h"
#include "peers/link.h"

namespace arch {

// The shared machinery; the two subclasses only say how to poll and send on their socket.
class NetLink : public Link {
public:
    // log: one line per dropped or rejected transfer message (poll never throws).
    explicit NetLink(std::function<void(const std::string&)> log) : log_(std::move(log)) {}

    std::optional<LinkEvent> poll(int timeout_ms) override;
    bool send(const std::string& peer, protocol::Type type, uint64_t round, std::span<const std::byte> payload) override;
    bool send_blob(const std::string& peer, protocol::Type type, uint64_t round, SharedBlob blob) override;
    void accept_blobs(const std::map<protocol::Type, uint64_t>& max_bytes) override { accepted_ = max_bytes; }
    void charge_transfers(std::function<bool(const std::string& peer)> within) override { charge_ = std::move(within); }
    void withdraw(const SharedBlob& blob) override;
    void forget(const std::string& peer) override;
    void drop_queue(const std::string& peer) override;
    uint64_t bytes_sent(protocol::Type type) const override;
    uint64_t bytes_received(protocol::Type type) const override;
    LinkStats stats(const std::string& peer) const override;
    void give_back(std::vector<std::byte>&& blob) override;
    // What the inbound transfers under way hold in memory, all peers together, and how many there are:
    // the figures docs/protocol.md bounds ("What a message may cost"), for tests and fuzz_link.
    uint64_t inbound_bytes_held() const;
    std::size_t inbound_transfers() const { return in_.size(); }
    // Called after each transfer chunk this side sends: the seam for fault injection (the peer's
    // hidden --fault-kill-after-chunks, which test_run uses to die in the middle of a blob).
    void on_chunk_sent(std::function<void()> hook) { on_chunk_sent_ = std::move(hook); }
    // Called for each transfer this side refuses at its begin (over a bound), with the reason.
    void on_refused(std::function<void(const std::string& reason)> hook) { on_refused_ = std::move(hook); }

    static constexpr uint32_t kChunkBytes = 1u << 20;
    // Bounds per peer: what may wait in its outbound queue, and how long an inbound transfer may go
    // without a chunk before it is dropped (a resume after that starts it again).
    static constexpr std::size_t kMaxQueuedMessages = 256;
    static constexpr std::size_t kMaxQueuedBlobs = 3;
    static constexpr double kStallSeconds = 120;
    static constexpr std::size_t kRememberedTransfers = 16;  // completed ids answered "done" again
    // Delivered blobs' memory kept for the next ones (give_back): the most buffers, the smallest worth it.
    static constexpr std::size_t kSpareBlobs = 16;
    static constexpr std::size_t kSmallestSpare = 4 * kChunkBytes;
    static constexpr std::size_t kDrainMessages = 64;        // transfer messages one poll handles in a row
    static constexpr std::chrono::milliseconds kDrainTime{4};  // and for at most this long

protected:
    virtual std::optional<net::Incoming> poll_socket(int timeout_ms) = 0;
    // The payload in pieces (a chunk's prefix, then its data where the blob lies), copied once, into the frame.
    virtual bool send_socket(const std::string& peer, const net::Header& header, net::Pieces payload) = 0;

private:
    struct Item {  // one queued outbound message or blob
        protocol::Type type;
        uint64_t round;
        std::vector<std::byte> payload;              // a small message
        SharedBlob shared;                          // or a blob, shared with other peers' queues
        std::unique_ptr<net::TransferSender> blob;  // and its transfer
        bool begun = false;
        Clock::time_point begun_at{};
    };
    struct Inbound {
        net::TransferReceiver receiver;
        uint64_t round = 0;
        Clock::time_point last_progress;  // a new chunk held (or the begin, at first)
        Clock::time_point began;          // the first begin of this blob type from the peer since one was delivered
        Clock::time_point first_chunk{};  // the first chunk held: the blob existed by then
    };
    void pump(const std::string& peer);
    // Takes the blobs `which` picks off one peer's queue, aborting a transfer under way.
    void drop_blobs(const std::string& peer, std::deque<Item>& q, const std::function<bool(const Item&)>& which);
    bool emit(const std::string& peer, uint16_t type, uint64_t round, net::Pieces payload, protocol::Type counted_as);
    bool emit(const std::string& peer, uint16_t type, uint64_t round, std::span<const std::byte> payload,
              protocol::Type counted_as) {
        return emit(peer, type, round, net::Pieces(&payload, 1), counted_as);
    }
    std::optional<LinkEvent> on_transfer(const net::Incoming& in);
    std::optional<LinkEvent> poll_once(int timeout_ms, bool& read);  // read: a message came off the socket
    const net::Digest& digest_of(const SharedBlob& blob);
    bool admit_begin(const net::Incoming& in, uint64_t id);  // type, size, one per type, replays
    void expire_stalled();
    // A transfer of `bytes` finished in `seconds`: folds its rate into the peer's figure.
    static void measure(double& rate, uint64_t bytes, double seconds);

    // A transfer just begun takes the smallest spare that holds it whole and is at most twice its size
    // (Link::give_back).
    void offer_spare(net::TransferReceiver& receiver);

    std::map<std::string, std::deque<Item>> out_;
    std::vector<std::vector<std::byte>> spare_;
    std::map<std::pair<std::string, uint64_t>, Inbound> in_;
    std::map<std::string, std::deque<uint64_t>> completed_;  // per peer, the last transfers delivered
    // Per peer and blob type, when the first transfer not yet delivered began: a begin that replaces
    // one under way (or an aborted one) gives the blob no more time than the first had.
    std::map<std::pair<std::string, uint32_t>, Clock::time_point> undelivered_since_;
    // The checksum of each shared blob being sent, computed once whatever the number of peers.
    std::map<const void*, std::pair<std::weak_ptr<const Blob>, net::Digest>> digests_;
    std::function<bool(const std::string&)> charge_;
    std::optional<std::map<protocol::Type, uint64_t>> accepted_;  // none: every blob is taken
    std::map<uint16_t, uint64_t> sent_, received_;
    std::map<std::string, LinkStats> stats_;  // per peer, what this side measured
    std::function<void(const std::string&)> log_;
    std::function<void()> on_chunk_sent_;
    std::function<void(const std::string&)> on_refused_;
    Clock::time_point last_retry_{};
};

class HostLink final : public NetLink {
public:
    HostLink(net::HostSocket& socket, std::function<void(const std::string&)> log)
        : NetLink(std::move(log)), socket_(socket) {}

private:
    std::optional<net::Incoming> poll_socket(int timeout_ms) override { return socket_.poll(timeout_ms); }
    bool send_socket(const std::string& peer, const net::Header& h, net::Pieces p) override {
        return socket_.send(peer, h, p);
    }
    net::HostSocket& socket_;
};

class PeerLink final : public NetLink {
public:
    PeerLink(net::PeerSocket& socket, std::function<void(const std::string&)> log)
        : NetLink(std::move(log)), socket_(socket) {}

private:
    std::optional<net::Incoming> poll_socket(int timeout_ms) override { return socket_.poll(timeout_ms); }
    bool send_socket(const std::string&, const net::Header& h, net::Pieces p) override {
        return socket_.send(h, p);
    }
    net::PeerSocket& socket_;
};

}  // namespace arch
