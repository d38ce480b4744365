// net/zmq_common.cpp: socket options, monitor events and frame validation shared by both sockets.
#include "net/zmq_common.h"

#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "core/log.h"

namespace arch::net {

uint64_t Traffic::bytes_sent() const {
    uint64_t total = 0;
    for (const auto& entry : sent) total += entry.second.bytes;
    return total;
}

uint64_t Traffic::bytes_received() const {
    uint64_t total = 0;
    for (const auto& entry : received) total += entry.second.bytes;
    return total;
}

LogFn stderr_log() {
    return [](const std::string& line) { log::get("net")->info(line); };
}

}  // namespace arch::net

namespace arch::net::detail {

void block_signals_in_this_thread() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

void set_int(zmq::socket_t& socket, int option, int value, const char* name) {
    if (zmq_setsockopt(socket.handle(), option, &value, sizeof(value)) != 0)
        throw Error(std::string("cannot set ") + name + "=" + std::to_string(value) + ": " +
                    zmq_strerror(zmq_errno()));
}

void set_string(zmq::socket_t& socket, int option, const std::string& value, const char* name) {
    if (zmq_setsockopt(socket.handle(), option, value.data(), value.size()) != 0)
        throw Error(std::string("cannot set ") + name + ": " + zmq_strerror(zmq_errno()));
}

void apply_limits(zmq::socket_t& socket, const Limits& limits) {
    if (limits.max_message_bytes <= static_cast<int64_t>(kHeaderBytes))
        throw Error("max_message_bytes must exceed the " + std::to_string(kHeaderBytes) +
                    "-byte header");
    const int64_t max_bytes = limits.max_message_bytes;
    if (zmq_setsockopt(socket.handle(), ZMQ_MAXMSGSIZE, &max_bytes, sizeof(max_bytes)) != 0)
        throw Error(std::string("cannot set ZMQ_MAXMSGSIZE: ") + zmq_strerror(zmq_errno()));
    set_int(socket, ZMQ_HANDSHAKE_IVL, limits.handshake_ivl_ms, "ZMQ_HANDSHAKE_IVL");
    set_int(socket, ZMQ_HEARTBEAT_IVL, limits.heartbeat_ivl_ms, "ZMQ_HEARTBEAT_IVL");
    set_int(socket, ZMQ_HEARTBEAT_TIMEOUT, limits.heartbeat_timeout_ms, "ZMQ_HEARTBEAT_TIMEOUT");
    set_int(socket, ZMQ_HEARTBEAT_TTL, limits.heartbeat_ttl_ms, "ZMQ_HEARTBEAT_TTL");
    set_int(socket, ZMQ_RECONNECT_IVL, limits.reconnect_ivl_ms, "ZMQ_RECONNECT_IVL");
    set_int(socket, ZMQ_RECONNECT_IVL_MAX, limits.reconnect_ivl_max_ms, "ZMQ_RECONNECT_IVL_MAX");
    set_int(socket, ZMQ_LINGER, limits.linger_ms, "ZMQ_LINGER");
    set_int(socket, ZMQ_SNDTIMEO, limits.send_timeout_ms, "ZMQ_SNDTIMEO");
    set_int(socket, ZMQ_SNDHWM, limits.queue_messages, "ZMQ_SNDHWM");
    set_int(socket, ZMQ_RCVHWM, limits.queue_messages, "ZMQ_RCVHWM");
}

zmq::socket_t start_monitor(zmq::context_t& context, zmq::socket_t& socket, int events) {
    static std::atomic<uint64_t> counter{0};
    const std::string endpoint = "inproc://arch-net-monitor-" + std::to_string(++counter);
    if (zmq_socket_monitor(socket.handle(), endpoint.c_str(), events) != 0)
        throw Error(std::string("cannot monitor socket: ") + zmq_strerror(zmq_errno()));
    zmq::socket_t pair(context, zmq::socket_type::pair);
    set_int(pair, ZMQ_LINGER, 0, "ZMQ_LINGER");
    pair.connect(endpoint);
    return pair;
}

std::optional<MonitorEvent> read_monitor_event(zmq::socket_t& monitor) {
    zmq::message_t first, second;
    if (!monitor.recv(first, zmq::recv_flags::dontwait)) return std::nullopt;
    if (!first.more() || first.size() < 6)
        return std::nullopt;  // libzmq's v1 event: u16 event + u32 value
    (void)monitor.recv(second);
    MonitorEvent event;
    std::memcpy(&event.event, first.data(), 2);
    std::memcpy(&event.value, static_cast<const std::byte*>(first.data()) + 2, 4);
    event.endpoint = second.to_string();
    return event;
}

std::string describe_handshake_failure(const MonitorEvent& e) {
    const std::string where = " (" + e.endpoint + ")";
    if (e.event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return "authentication refused with ZAP status " + std::to_string(e.value) + where;
    if (e.event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
        return "handshake failed (timed out, or the other side closed during the handshake: e.g. a "
               "client without CURVE)" +
               where;
    switch (e.value) {
        case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
            return "handshake failed: security mechanism mismatch (the other side does not use "
                   "CURVE)" +
                   where;
        case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
            return "handshake failed: cryptographic error (the client may hold a wrong host public "
                   "key)" +
                   where;
        case ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE:
            return "handshake failed: key exchange error" + where;
        default: {
            char code[16];
            std::snprintf(code, sizeof(code), "0x%08x", e.value);
            return std::string("handshake failed: protocol error ") + code + where;
        }
    }
}

void count(std::map<uint16_t, TypeTraffic>& table, uint16_t type, std::size_t bytes) {
    auto& entry = table[type];
    entry.messages += 1;
    entry.bytes += bytes;
}

bool accept_frame(zmq::message_t& frame, uint64_t run_id, Header& header, Payload& payload, Traffic& traffic,
                  std::string& reason) {
    const auto* bytes = static_cast<const std::byte*>(frame.data());
    const std::span<const std::byte> view(bytes, frame.size());
    auto decoded = decode_header(view, reason);
    if (decoded && decoded->run_id != run_id) {
        char text[80];
        std::snprintf(text, sizeof(text), "wrong run id %016llx (this run is %016llx)",
                      static_cast<unsigned long long>(decoded->run_id),
                      static_cast<unsigned long long>(run_id));
        reason = text;
        decoded.reset();
    }
    if (!decoded) {
        traffic.rejected_messages += 1;
        traffic.rejected_bytes += frame.size();
        return false;
    }
    header = *decoded;
    count(traffic.received, header.type, frame.size());
    auto held = std::make_shared<zmq::message_t>(std::move(frame));
    payload = Payload(held, std::span<const std::byte>(static_cast<const std::byte*>(held->data()) + kHeaderBytes,
                                                       held->size() - kHeaderBytes));
    return true;
}

zmq::message_t build_frame(Header header, Pieces payload, uint64_t run_id,
                           uint64_t sequence, const Limits& limits) {
    const std::size_t payload_bytes = bytes_of(payload);
    const std::size_t total = kHeaderBytes + payload_bytes;
    if (static_cast<int64_t>(total) > limits.max_message_bytes)
        throw Error("message of " + std::to_string(total) + " bytes (" + type_name(header.type) +
                    ") exceeds max_message_bytes " + std::to_string(limits.max_message_bytes) +
                    "; send large payloads with a transfer (net/transfer.h)");
    header.run_id = run_id;
    header.sequence = sequence;
    header.payload_bytes = static_cast<uint32_t>(payload_bytes);
    zmq::message_t frame(total);
    auto* out = static_cast<std::byte*>(frame.data());
    encode_header(header, out);
    out += kHeaderBytes;
    for (const std::span<const std::byte> piece : payload) {
        if (!piece.empty()) std::memcpy(out, piece.data(), piece.size());
        out += piece.size();
    }
    return frame;
}

}  // namespace arch::net::detail
