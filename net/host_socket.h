// net/host_socket.h: the host's end of the run: a ROUTER socket, CURVE server, that only peers on
// the allow-list can reach. Each message comes with the peer's key as authenticated by ZAP; replies
// are routed by that key. One thread calls poll() and send(); inside, a reader thread drains the
// socket all the time, so libzmq's inbound pipe never fills whatever the caller is doing (a full pipe
// plus a ZMTP heartbeat timeout aborts libzmq 4.3.4: zeromq/libzmq#4364), and what it read waits in a
// queue bounded per peer. Sends never block. A key holds one live connection, its newest: when a newer
// one speaks, the older ones are closed with what libzmq queued on them. Owns its own ZeroMQ context,
// because a context holds exactly one ZAP handler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/clock.h"
#include "net/allow_list.h"
#include "net/keys.h"
#include "net/socket_types.h"

namespace arch::net {

struct HostSocketOptions {
    std::string bind_endpoint =
        "tcp://127.0.0.1:*";  // "*" port: pick an ephemeral one (see endpoint())
    // A bind on every IPv4 address (tcp://0.0.0.0:PORT) takes IPv6 too, on one dual-stack socket,
    // where this machine has IPv6; else it stays IPv4 only (docs/net.md, "Hosting from home").
    bool dual_stack = true;
    KeyPair keys;             // the host's long-term pair
    AllowList allow;          // peers that may connect
    uint64_t run_id = 0;      // messages of other runs are dropped
    Limits limits;
    LogFn log = stderr_log();
    std::string zap_domain = "archipelago";
    // Read but not yet taken by poll(), per peer: beyond either bound its newer messages are dropped
    // (and counted in Traffic::dropped_messages). An honest peer has a few transfer chunks in flight.
    std::size_t backlog_messages = 512;
    std::size_t backlog_bytes = 16u << 20;
    // Lines about outsiders (failed handshakes, keys the allow-list refuses, messages from keys taken
    // off it): at most this many a window, the rest counted in one summary line (net/log_throttle.h).
    int outsider_lines_per_window = 10;
    double outsider_window_s = 60;
    const Clock* clock = &Clock::real();  // what that window reads the time from (a test's ManualClock)
};

class HostSocket {
  public:
    // Starts the ZAP handler, then binds. Throws arch::Error (bad keys, endpoint in use, ...).
    explicit HostSocket(HostSocketOptions options);
    ~HostSocket();
    HostSocket(const HostSocket&) = delete;
    HostSocket& operator=(const HostSocket&) = delete;

    // The endpoint actually bound, with the real port: "tcp://127.0.0.1:41234".
    std::string endpoint() const;

    // Waits up to timeout_ms for one message or connection event. Malformed frames, frames from
    // another run and frames without an authenticated key are dropped and logged; they never
    // reach the caller. kind == connected is reported before a connection's first message;
    // kind == disconnected when libzmq drops the connection (closed, or silent beyond
    // heartbeat_timeout_ms). A disconnect is advisory: a later message from the key means it is
    // back.
    std::optional<Incoming> poll(int timeout_ms);

    // Sends one message to the peer's newest connection. run_id, sequence and payload_bytes of
    // `header` are filled in by the socket. Returns false (and logs) if the peer is not connected
    // or its queue is full (it does not read): the call never waits. Throws arch::Error if the message exceeds
    // max_message_bytes (use a transfer for large payloads).
    bool send(const std::string& peer_key, const Header& header, std::span<const std::byte> payload);
    // The same, the payload in pieces (a chunk's prefix and its data where the blob lies), copied once, into the frame.
    bool send(const std::string& peer_key, const Header& header, Pieces payload);

    // Replaces the allow-list, from any thread. New handshakes use it at once; messages from
    // connected keys no longer on it are dropped from then on.
    void set_allow_list(AllowList allow);

    bool connected(const std::string& peer_key) const;
    Traffic traffic() const;  // a copy: the reader thread counts too

  private:
    struct State;
    std::unique_ptr<State> state_;
};

}  // namespace arch::net
