// net/transfer.h: moving one large blob (a pseudo-gradient, the global model) as checksummed
// chunks with credit-based flow control, resumable after a reconnect. Pure state machines: they
// consume message payloads and return the messages to send; they never touch a socket or a clock,
// so the host and peer loops embed them and tests drive them directly.
//
// Conversation (sender S, receiver R; types in message.h, layouts in transfer_wire.h):
//   S: begin  ->  R: status (chunks held, credit = window, new session)
//   S: chunk x credit  ->  R: credit +1 per chunk consumed (with "resend i" after a bad chunk)
//   R: done once every chunk is held and the whole-blob checksum matches;  either: abort(reason)
// Resume: after a reconnect S calls begin() again; R answers with the chunks it holds and S sends
// only the rest. Credit belongs to a session, so credits from before a reconnect are ignored.
// What a message may cost the other side is bounded (docs/protocol.md, "What a message may cost"):
// S takes one status per begin it sent and a credit only for a chunk it sent, so each control message
// buys at most one chunk; R allocates a blob's memory as its chunks arrive, at most a window (and the
// resends) beyond the bytes it holds.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "net/transfer_wire.h"

namespace arch::net {

struct Outbound {
    Outbound() = default;
    Outbound(uint16_t of_type, std::vector<std::byte> bytes, std::vector<std::span<const std::byte>> blob_data = {})
        : type(of_type), payload(std::move(bytes)), data(std::move(blob_data)) {}

    uint16_t type = 0;  // a kTransfer* type from message.h
    std::vector<std::byte> payload;  // a chunk's: its prefix (transfer_wire.h), its data in `data`
    // A chunk's data, where the sender's blob keeps it (valid while the sender is): the payload on the wire
    // is `payload` and then these, so the bytes are copied once, into the frame (Socket::send with pieces).
    std::vector<std::span<const std::byte>> data;

    std::vector<std::span<const std::byte>> pieces() const;  // `payload`, then `data`
    std::vector<std::byte> joined() const;                    // the same, in one buffer
};

// What one incoming message did. `rejected` is empty when it was accepted; otherwise it says why
// (the caller logs it) and the receiver's data (held chunks, bytes) is unchanged.
struct TransferStep {
    std::vector<Outbound> replies;
    std::string rejected;
};

class TransferSender {
  public:
    // chunk_bytes: at most a few MiB and below the link's max_message_bytes minus 80 bytes of
    // headers.
    TransferSender(uint64_t transfer_id, std::vector<std::byte> blob, uint32_t chunk_bytes,
                   uint32_t tag = 0);
    // Sends `blob` without copying it; `owner` keeps it alive (one copy shared by many senders).
    TransferSender(uint64_t transfer_id, std::span<const std::byte> blob, std::shared_ptr<const void> owner,
                   uint32_t chunk_bytes, uint32_t tag = 0);
    // The same, with the blob's checksum already known (a blob sent to many peers is hashed once).
    TransferSender(uint64_t transfer_id, std::span<const std::byte> blob, std::shared_ptr<const void> owner,
                   uint32_t chunk_bytes, uint32_t tag, const Digest& digest);
    // A blob in pieces that lie apart (a head, a model where its owner keeps it, a tail), sent as if
    // joined, without joining them: a chunk across two pieces is put together as it is encoded.
    // `digest` is checksum(pieces).
    TransferSender(uint64_t transfer_id, std::vector<std::span<const std::byte>> pieces,
                   std::shared_ptr<const void> owner, uint32_t chunk_bytes, uint32_t tag, const Digest& digest);

    // The most chunks in flight, whatever window a receiver asks for.
    static constexpr uint32_t kMaxWindowChunks = 16;

    Outbound begin();  // send first, and again after every reconnect; the receiver's next status answers it
    TransferStep on_message(uint16_t type,
                            std::span<const std::byte> payload);  // status/credit/done/abort
    Outbound abort(const std::string& reason);                  // give up; done() stays false

    bool done() const { return done_; }
    bool failed() const { return !error_.empty(); }
    const std::string& error() const { return error_; }
    uint64_t transfer_id() const { return begin_.id; }
    uint32_t chunk_count() const { return begin_.chunk_count; }
    uint64_t chunks_sent() const { return chunks_sent_; }  // chunk messages produced, all sessions
    uint64_t credits_received() const { return credits_received_; }
    // Bytes the receiver has acknowledged: what it reported holding at this session's start, and a
    // chunk a credit since.
    uint64_t bytes_acknowledged() const;

  private:
    TransferSender(uint64_t transfer_id, std::shared_ptr<const std::vector<std::byte>> blob, uint32_t chunk_bytes,
                   uint32_t tag);
    std::vector<Outbound> pump();  // chunks while credit lasts
    // The pieces that hold bytes [offset, offset + length) of the blob.
    std::vector<std::span<const std::byte>> pieces_of(uint64_t offset, uint64_t length) const;

    BeginMsg begin_;
    std::shared_ptr<const void> owner_;
    std::vector<std::span<const std::byte>> pieces_;  // the blob's bytes, one piece after another
    uint64_t size_ = 0;                                // theirs together
    uint32_t session_ = 0;
    bool have_session_ = false;
    uint32_t credit_ = 0;
    uint32_t in_flight_ = 0;         // chunks sent in this session and not yet credited
    uint64_t session_credits_ = 0;   // credits received in this session
    uint64_t reported_held_ = 0;     // chunks the receiver said it held at this session's start
    bool awaiting_status_ = false;  // a begin went out: one status may answer it
    std::vector<bool> held_;  // what the receiver reported at the start of this session
    uint32_t cursor_ = 0;     // next index to consider in this session
    std::vector<uint32_t> resend_;
    bool done_ = false;
    std::string error_;
    uint64_t chunks_sent_ = 0;
    uint64_t credits_received_ = 0;
};

struct ReceiverLimits {
    uint64_t max_total_bytes = 4ull << 30;  // refuse to allocate more for one blob
    uint32_t max_chunk_bytes = 8u << 20;
    // Chunks in flight: memory in queues ~ window * chunk. 8 MiB covers a 1 Gbit/s link at 60 ms of
    // round trip, and stays below the host socket's per-peer backlog (net/host_socket.h, 16 MiB), so an
    // honest sender's window is never cut there.
    uint32_t window_chunks = 8;
    uint32_t max_bad_chunks = 16;  // wrong checksum/length/index before the transfer is aborted
    uint32_t max_chunk_count = 1u << 16;  // the held-chunk bitmap a begin makes is at most 8 KiB
};

class TransferReceiver {
  public:
    // expected_id 0 accepts any transfer id; otherwise begins for other ids are rejected.
    explicit TransferReceiver(ReceiverLimits limits = {}, uint64_t expected_id = 0);

    TransferStep on_message(uint16_t type, std::span<const std::byte> payload);  // begin/chunk/abort

    bool active() const { return active_; }      // a begin was accepted
    bool complete() const { return complete_; }  // every chunk held and the blob digest verified
    uint64_t transfer_id() const { return begin_.id; }
    uint32_t tag() const { return begin_.tag; }
    uint32_t chunk_count() const { return begin_.chunk_count; }
    uint64_t total_bytes() const { return begin_.total_bytes; }  // as its begin declared
    uint32_t chunks_held() const { return chunks_held_; }
    uint64_t bytes_held() const { return bytes_held_; }
    const std::vector<bool>& held() const { return held_; }
    // Partial until complete(): it grows as chunks arrive (up to the furthest chunk held, at most the
    // window and the resends beyond the bytes held), so a begin's declared size costs nothing until
    // its bytes come.
    std::span<const std::byte> data() const { return std::span<const std::byte>(data_).first(extent_); }
    std::vector<std::byte> take();  // the blob (once complete), the receiver's own buffer (no copy), and reset to idle
    // Memory for the blob a begin just announced (a delivered blob's, given back): its pages are the
    // process's already, and what it holds is written over, never zeroed first. Taken only before the
    // first chunk, and only if it holds the whole blob; false: left with the caller.
    bool use_memory(std::vector<std::byte>& spare);
    void reset();                 // forget the transfer (e.g. its round was abandoned)

  private:
    TransferStep on_begin(std::span<const std::byte> payload);
    TransferStep on_chunk(std::span<const std::byte> payload);
    Outbound status() const;
    Outbound credit(uint32_t resend) const;
    TransferStep bad_chunk(uint32_t resend, std::string reason, bool current_session);

    ReceiverLimits limits_;
    uint64_t expected_id_;
    bool active_ = false;
    bool complete_ = false;
    BeginMsg begin_;
    uint32_t session_ = 0;
    std::vector<bool> held_;
    uint32_t chunks_held_ = 0;
    uint64_t bytes_held_ = 0;
    uint32_t bad_chunks_ = 0;
    std::vector<std::byte> data_;  // its size may run past extent_: memory given with use_memory
    uint64_t extent_ = 0;          // the end of the furthest chunk held
    // The blob's digest, taken a chunk at a time as the chunks from the first on are held (each
    // while it is still in the cache), not in a pass over the whole blob at its end.
    std::unique_ptr<DigestStream> digest_;
    uint32_t digested_ = 0;  // chunks [0, digested_) are in it
};

}  // namespace arch::net
