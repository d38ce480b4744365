// net/peer_socket.cpp: DEALER + CURVE client + monitor.
#include "net/peer_socket.h"

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <deque>
#include <optional>
#include <zmq.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "net/zmq_common.h"

namespace arch::net {

struct PeerSocket::State {
    PeerSocketOptions options;
    zmq::context_t context;
    zmq::socket_t dealer;
    zmq::socket_t monitor;
    Traffic traffic;
    uint64_t sequence = 0;
    bool is_connected = false;
    std::deque<Incoming> pending;
    // libzmq does not dial again after the host's ZAP handler refused the key (its session ends on
    // that protocol error): the socket does, after a wait that doubles from 1 s to 30 s, so a peer
    // started before the host read its allow-list entry gets in once it has (docs/net.md).
    std::optional<Clock::time_point> redial_at;
    std::chrono::milliseconds redial_wait{1000};
    static constexpr std::chrono::milliseconds kRedialMax{30000};

    void log(const std::string& line) {
        if (options.log) options.log(line);
    }
    void event(Incoming::Kind kind) {
        Incoming in;
        in.kind = kind;
        in.peer_key = options.host_public_key;
        pending.push_back(std::move(in));
    }
    void handle_monitor_event(const detail::MonitorEvent& e);
    void receive_one();
    void redial_if_due();
};

PeerSocket::PeerSocket(PeerSocketOptions options) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.options = std::move(options);
    check_public_key(s.options.host_public_key, "host public key");
    check_public_key(s.options.keys.public_key, "peer public key");
    check_public_key(s.options.keys.secret_key, "peer secret key");
    s.dealer = zmq::socket_t(s.context, zmq::socket_type::dealer);
    detail::apply_limits(s.dealer, s.options.limits);
    detail::set_int(s.dealer, ZMQ_IPV6, 1, "ZMQ_IPV6");  // a host's IPv6 address as well as its IPv4 ones
    detail::set_string(s.dealer, ZMQ_CURVE_SERVERKEY, s.options.host_public_key,
                       "ZMQ_CURVE_SERVERKEY");
    detail::set_string(s.dealer, ZMQ_CURVE_PUBLICKEY, s.options.keys.public_key,
                       "ZMQ_CURVE_PUBLICKEY");
    detail::set_string(s.dealer, ZMQ_CURVE_SECRETKEY, s.options.keys.secret_key,
                       "ZMQ_CURVE_SECRETKEY");
    s.monitor = detail::start_monitor(s.context, s.dealer,
                                      ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                          ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    try {
        s.dealer.connect(s.options.host_endpoint);
    } catch (const zmq::error_t& e) {
        throw Error("cannot connect to host '" + s.options.host_endpoint + "': " + e.what());
    }
}

PeerSocket::~PeerSocket() {
    State& s = *state_;
    s.dealer.close();
    s.monitor.close();
    s.context.close();
}

void PeerSocket::State::handle_monitor_event(const detail::MonitorEvent& e) {
    if (e.event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
        is_connected = true;
        redial_wait = std::chrono::milliseconds(1000);
        event(Incoming::Kind::connected);
    } else if (e.event == ZMQ_EVENT_DISCONNECTED) {
        if (is_connected)
            log("peer: disconnected from host " + options.host_endpoint + "; reconnecting");
        is_connected = false;
        event(Incoming::Kind::disconnected);
    } else if (e.event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        log("peer: host refused our key " + fingerprint(options.keys.public_key) + " (ZAP status " +
            std::to_string(e.value) + "); ask the host to add it to its allow-list");
        if (pending.empty() || pending.back().kind != Incoming::Kind::refused) event(Incoming::Kind::refused);
        if (!redial_at) {
            redial_at = Clock::real().now() + redial_wait;
            redial_wait = std::min(2 * redial_wait, kRedialMax);
        }
    } else {
        log("peer: " + detail::describe_handshake_failure(e));
    }
}

void PeerSocket::State::receive_one() {
    zmq::message_t frame;
    if (!dealer.recv(frame, zmq::recv_flags::dontwait)) return;
    bool more = frame.more();
    std::size_t extra = 0;
    while (more) {
        zmq::message_t part;
        (void)dealer.recv(part);
        more = part.more();
        ++extra;
    }
    Header header;
    Payload payload;
    std::string reason;
    if (extra != 0) {
        reason = "expected 1 frame, found " + std::to_string(extra + 1);
        traffic.rejected_messages += 1;
        traffic.rejected_bytes += frame.size();
    } else if (detail::accept_frame(frame, options.run_id, header, payload, traffic, reason)) {
        Incoming in;
        in.peer_key = options.host_public_key;
        in.header = header;
        in.payload = std::move(payload);
        pending.push_back(std::move(in));
        return;
    }
    log("peer: dropped a message from the host: " + reason);
}

void PeerSocket::State::redial_if_due() {
    if (!redial_at || Clock::real().now() < *redial_at) return;
    redial_at.reset();
    try {
        dealer.disconnect(options.host_endpoint);
    } catch (const zmq::error_t&) {  // libzmq already forgot the refused connection
    }
    dealer.connect(options.host_endpoint);
    log("peer: dialling host " + options.host_endpoint + " again after its refusal (next wait " +
        std::to_string(redial_wait.count() / 1000) + " s)");
}

std::optional<Incoming> PeerSocket::poll(int timeout_ms) {
    State& s = *state_;
    const auto deadline = Clock::real().now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        if (!s.pending.empty()) {
            Incoming next = std::move(s.pending.front());
            s.pending.pop_front();
            return next;
        }
        s.redial_if_due();
        const auto until = s.redial_at ? std::min(deadline, *s.redial_at) : deadline;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::real().now());
        zmq::pollitem_t items[] = {{s.dealer.handle(), 0, ZMQ_POLLIN, 0},
                                   {s.monitor.handle(), 0, ZMQ_POLLIN, 0}};
        try {
            zmq::poll(items, 2, std::chrono::milliseconds(std::max<long>(0, left.count())));
        } catch (const zmq::error_t& e) {
            if (e.num() != EINTR) throw;
            return std::nullopt;  // a signal (SIGTERM): let the caller look at its stop flag
        }
        // Every message already received goes before a disconnect event: the host's last words (a
        // bye, the end of a transfer) arrive just before it closes the connection.
        if (items[0].revents & ZMQ_POLLIN)
            while (s.dealer.get(zmq::sockopt::events) & ZMQ_POLLIN) s.receive_one();
        if (items[1].revents & ZMQ_POLLIN)
            while (auto event = detail::read_monitor_event(s.monitor))
                s.handle_monitor_event(*event);
        if (s.pending.empty() && Clock::real().now() >= deadline) return std::nullopt;
    }
}

bool PeerSocket::send(const Header& header, std::span<const std::byte> payload) {
    return send(header, Pieces(&payload, 1));
}

bool PeerSocket::send(const Header& header, Pieces payload) {
    State& s = *state_;
    zmq::message_t frame =
        detail::build_frame(header, payload, s.options.run_id, ++s.sequence, s.options.limits);
    const std::size_t bytes = frame.size();
    if (!s.dealer.send(frame, zmq::send_flags::none)) {
        s.log("peer: send of " + type_name(header.type) +
              " timed out (queue full or never connected)");
        return false;
    }
    detail::count(s.traffic.sent, header.type, bytes);
    return true;
}

bool PeerSocket::connected() const {
    return state_->is_connected;
}

const Traffic& PeerSocket::traffic() const {
    return state_->traffic;
}

}  // namespace arch::net
