// net/socket_types.h: what HostSocket and PeerSocket share: the limits every socket applies, what a
// poll returns, per-type traffic counters and the log callback.
// Bytes are counted as message bytes (36-byte header + payload); CURVE adds about 40 bytes per
// message plus the handshake and heartbeats on the wire, which these counters leave out.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "net/message.h"
#include "net/payload.h"

namespace arch::net {

// Applied to every socket, always (there is no "unlimited"). Times in milliseconds.
struct Limits {
    int64_t max_message_bytes =
        16 << 20;                 // ZMQ_MAXMSGSIZE: a bigger inbound frame drops the connection
    int handshake_ivl_ms = 5000;  // ZMQ_HANDSHAKE_IVL: CURVE handshake must finish within this
    int heartbeat_ivl_ms = 1000;  // ZMQ_HEARTBEAT_IVL: send a ZMTP PING this often
    int heartbeat_timeout_ms =
        5000;                      // ZMQ_HEARTBEAT_TIMEOUT: no traffic for this long -> disconnect
    int heartbeat_ttl_ms = 10000;  // ZMQ_HEARTBEAT_TTL: the other side drops us after this silence
    int reconnect_ivl_ms = 200;    // ZMQ_RECONNECT_IVL: first reconnect delay (peer side)
    int reconnect_ivl_max_ms = 10000;  // ZMQ_RECONNECT_IVL_MAX: delay doubles up to this
    int linger_ms = 500;               // ZMQ_LINGER: how long close() may flush queued messages
    int send_timeout_ms = 5000;        // ZMQ_SNDTIMEO: send() gives up (returns false) after this (the host never waits)
    int queue_messages = 256;          // ZMQ_SNDHWM and ZMQ_RCVHWM
};

// One thing poll() hands back: a message, or a connection event (refused: on a peer, the host's
// ZAP handler refused this peer's key at the handshake).
// peer_key is the authenticated Z85 key of the other side: on the host the ZAP User-Id of the
// connection the message came in on (never a payload field); on a peer, the host's key.
struct Incoming {
    enum class Kind { message, connected, disconnected, refused };
    Kind kind = Kind::message;
    std::string peer_key;
    Header header;                 // kind == message only
    Payload payload;               // kind == message only, held where it was received (net/payload.h)
    // kind == connected, on the host: the peer's address and the host's own address it came in on, as
    // the kernel has them ("ip:port", an IPv6 one in brackets); empty where the connection is not certain.
    std::string from, to;
};

struct TypeTraffic {
    uint64_t messages = 0;
    uint64_t bytes = 0;  // header + payload
};

struct Traffic {
    std::map<uint16_t, TypeTraffic> sent;      // by header type, messages handed to libzmq
    std::map<uint16_t, TypeTraffic> received;  // by header type, messages that passed validation
    uint64_t rejected_messages = 0;            // dropped by validation (bad header, wrong run, ...)
    uint64_t rejected_bytes = 0;
    uint64_t dropped_messages = 0;             // valid, but over the sender's backlog bound (host)
    uint64_t superseded_connections = 0;       // a key's older connections the host closed (it keeps the newest)
    uint64_t bytes_sent() const;
    uint64_t bytes_received() const;
};

// Receives one line per notable event (a refused key, a dropped frame, a disconnect). Called on
// the thread that calls poll(). Default: prints "net: ..." to stderr.
using LogFn = std::function<void(const std::string& line)>;
LogFn stderr_log();

}  // namespace arch::net
