// net/peer_socket.h: a peer's end of the run: a DEALER socket, CURVE client, that connects out to
// the host named in an invite and reconnects by itself with backoff (Limits::reconnect_ivl_ms
// doubling up to reconnect_ivl_max_ms). It trusts only the host key it was given.
// Not thread-safe: one thread owns the socket. Owns its own ZeroMQ context.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "net/keys.h"
#include "net/socket_types.h"

namespace arch::net {

struct PeerSocketOptions {
    std::string host_endpoint;    // from the invite
    std::string host_public_key;  // from the invite
    KeyPair keys;         // this peer's long-term pair (its public key is on the host's allow-list)
    uint64_t run_id = 0;  // from the invite; messages of other runs are dropped
    Limits limits;
    LogFn log = stderr_log();
};

class PeerSocket {
  public:
    // Connects in the background (returns at once). Throws arch::Error on bad keys or endpoint.
    explicit PeerSocket(PeerSocketOptions options);
    ~PeerSocket();
    PeerSocket(const PeerSocket&) = delete;
    PeerSocket& operator=(const PeerSocket&) = delete;

    // Waits up to timeout_ms for one message from the host, or a connection event: connected
    // after each successful CURVE handshake, disconnected when the link drops (libzmq then
    // reconnects by itself). A refused handshake is logged ("host refused our key ...") and dialled
    // again after 1 s, doubling to 30 s, until the host takes the key.
    // Malformed frames and frames of another run are dropped and logged.
    std::optional<Incoming> poll(int timeout_ms);

    // Queues one message for the host (sent once connected; libzmq keeps it across reconnects).
    // run_id, sequence and payload_bytes are filled in. Returns false if the queue stayed full for
    // send_timeout_ms. Throws arch::Error above max_message_bytes.
    bool send(const Header& header, std::span<const std::byte> payload);
    bool send(const Header& header, Pieces payload);  // in pieces, copied once, into the frame

    bool connected() const;  // as of the last poll(): a handshake succeeded, no disconnect since
    const Traffic& traffic() const;

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace arch::net
