// net/host_socket.cpp: ROUTER + CURVE server + ZAP handler + monitor; routing by authenticated key.
#include "net/host_socket.h"

#include <chrono>
#include <deque>
#include <map>
#include <zmq.hpp>

#include "core/error.h"
#include "net/zap_handler.h"
#include "net/zmq_common.h"

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN \
    93  // a DRAFT constant in libzmq 4.3 headers, accepted by stable builds
#endif

namespace arch::net {

struct HostSocket::State {
    HostOptions options;
    zmq::context_t context;
    std::unique_ptr<detail::ZapHandler> zap;
    zmq::socket_t router;
    zmq::socket_t monitor;
    std::string endpoint;
    Traffic traffic;
    uint64_t sequence = 0;
    struct Connection {
        std::string key;
        int fd = -1;
    };
    std::map<std::string, Connection> by_routing_id;  // routing id bytes -> connection
    std::map<std::string, std::string> routing_of;    // key -> newest routing id
    std::deque<Incoming> pending;

    ~State() {  // also runs when the constructor throws (e.g. the endpoint is in use)
        router.close();
        monitor.close();
        context.shutdown();  // makes the ZAP thread's recv return ETERM
        zap.reset();         // joins it
        context.close();
    }
    void log(const std::string& line) {
        if (options.log) options.log(line);
    }
    void drain_zap_log() {
        for (auto& line : zap->take_log()) log(line);
    }
    void handle_monitor_event(const detail::MonitorEvent& event);
    void receive_one();
};

HostSocket::HostSocket(HostOptions options) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.options = std::move(options);
    check_public_key(s.options.keys.public_key, "host public key");
    check_public_key(s.options.keys.secret_key, "host secret key");
    // The ZAP handler must exist before the socket binds: a handshake may start the moment it does.
    s.zap = std::make_unique<detail::ZapHandler>(s.context, s.options.zap_domain, s.options.allow);
    s.router = zmq::socket_t(s.context, zmq::socket_type::router);
    detail::apply_limits(s.router, s.options.limits);
    detail::set_int(s.router, ZMQ_ROUTER_MANDATORY, 1, "ZMQ_ROUTER_MANDATORY");
    detail::set_int(s.router, ZMQ_CURVE_SERVER, 1, "ZMQ_CURVE_SERVER");
    detail::set_string(s.router, ZMQ_CURVE_SECRETKEY, s.options.keys.secret_key,
                       "ZMQ_CURVE_SECRETKEY");
    detail::set_string(s.router, ZMQ_ZAP_DOMAIN, s.options.zap_domain, "ZMQ_ZAP_DOMAIN");
    detail::set_int(s.router, ZMQ_ZAP_ENFORCE_DOMAIN, 1, "ZMQ_ZAP_ENFORCE_DOMAIN");
    s.monitor = detail::start_monitor(
        s.context, s.router,
        ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    try {
        s.router.bind(s.options.bind_endpoint);
    } catch (const zmq::error_t& e) {
        throw Error("cannot bind host socket to '" + s.options.bind_endpoint + "': " + e.what());
    }
    s.endpoint = s.router.get(zmq::sockopt::last_endpoint);
}

HostSocket::~HostSocket() = default;

std::string HostSocket::endpoint() const {
    return state_->endpoint;
}

void HostSocket::State::handle_monitor_event(const detail::MonitorEvent& event) {
    if (event.event != ZMQ_EVENT_DISCONNECTED) {
        log("host: " + detail::describe_handshake_failure(event));
        return;
    }
    const int fd = static_cast<int>(event.value);
    for (auto it = by_routing_id.begin(); it != by_routing_id.end();) {
        if (it->second.fd != fd) {
            ++it;
            continue;
        }
        const std::string key = it->second.key;
        const auto current = routing_of.find(key);
        if (current != routing_of.end() && current->second == it->first) {
            routing_of.erase(current);
            log("host: peer " + fingerprint(key) + " disconnected");
            Incoming event_out;
            event_out.kind = Incoming::Kind::disconnected;
            event_out.peer_key = key;
            pending.push_back(std::move(event_out));
        }
        it = by_routing_id.erase(it);
    }
}

void HostSocket::State::receive_one() {
    zmq::message_t routing, frame;
    if (!router.recv(routing, zmq::recv_flags::dontwait)) return;
    std::size_t parts = 0;
    bool more = routing.more();
    while (more) {  // keep the first data frame, drain the rest
        zmq::message_t part;
        (void)router.recv(part);
        more = part.more();
        if (parts++ == 0) frame = std::move(part);
    }
    const char* user_id = parts > 0 ? frame.gets("User-Id") : nullptr;
    std::string key = user_id ? user_id : "";
    std::string reason;
    if (parts != 1) {
        reason = "expected 1 frame after the routing id, found " + std::to_string(parts);
    } else if (!is_valid_public_key(key)) {
        reason =
            "no authenticated key on the connection";  // fail closed; cannot happen with ZAP 200
    } else if (!zap->allow_list()->contains(key)) {
        reason = "key is no longer on the allow-list";
    }
    Header header;
    std::vector<uint8_t> payload;
    if (reason.empty() &&
        !detail::accept_frame(frame, options.run_id, header, payload, traffic, reason)) {
        // accept_frame counted it as rejected
    } else if (!reason.empty()) {
        traffic.rejected_messages += 1;
        traffic.rejected_bytes += frame.size();
    }
    if (!reason.empty()) {
        log("host: dropped a message from " +
            (key.empty() ? std::string("an unknown peer") : "peer " + fingerprint(key)) + ": " +
            reason);
        return;
    }
    const std::string rid = routing.to_string();
    if (!by_routing_id.count(rid)) {
        by_routing_id[rid] = Connection{key, frame.get(ZMQ_SRCFD)};
        routing_of[key] = rid;
        Incoming connected;
        connected.kind = Incoming::Kind::connected;
        connected.peer_key = key;
        pending.push_back(std::move(connected));
    }
    routing_of[key] = rid;  // the newest connection of a key gets the replies
    Incoming message;
    message.peer_key = std::move(key);
    message.header = header;
    message.payload = std::move(payload);
    pending.push_back(std::move(message));
}

std::optional<Incoming> HostSocket::poll(int timeout_ms) {
    State& s = *state_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        s.drain_zap_log();
        if (!s.pending.empty()) {
            Incoming next = std::move(s.pending.front());
            s.pending.pop_front();
            return next;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        // Wake at least every 100 ms so ZAP refusals reach the log while nothing else happens.
        const long wait = std::max<long>(0, std::min<long>(left.count(), 100));
        zmq::pollitem_t items[] = {{s.router.handle(), 0, ZMQ_POLLIN, 0},
                                   {s.monitor.handle(), 0, ZMQ_POLLIN, 0}};
        zmq::poll(items, 2, std::chrono::milliseconds(wait));
        if (items[1].revents & ZMQ_POLLIN)
            while (auto event = detail::read_monitor_event(s.monitor))
                s.handle_monitor_event(*event);
        if (items[0].revents & ZMQ_POLLIN) s.receive_one();
        if (s.pending.empty() && std::chrono::steady_clock::now() >= deadline) {
            s.drain_zap_log();
            return std::nullopt;
        }
    }
}

bool HostSocket::send(const std::string& peer_key, const Header& header,
                      std::span<const uint8_t> payload) {
    State& s = *state_;
    zmq::message_t frame =
        detail::build_frame(header, payload, s.options.run_id, ++s.sequence, s.options.limits);
    const std::size_t bytes = frame.size();
    const auto route = s.routing_of.find(peer_key);
    if (route == s.routing_of.end()) {
        s.log("host: cannot send " + type_name(header.type) + " to peer " + fingerprint(peer_key) +
              ": not connected");
        return false;
    }
    try {
        if (!s.router.send(zmq::buffer(route->second), zmq::send_flags::sndmore) ||
            !s.router.send(frame, zmq::send_flags::none)) {
            s.log("host: send to peer " + fingerprint(peer_key) + " timed out (queue full)");
            return false;
        }
    } catch (const zmq::error_t& e) {  // EHOSTUNREACH: the connection went away
        s.log("host: cannot send to peer " + fingerprint(peer_key) + ": " + e.what());
        return false;
    }
    detail::count(s.traffic.sent, header.type, bytes);
    return true;
}

void HostSocket::set_allow_list(AllowList allow) {
    state_->zap->set_allow_list(std::move(allow));
}

bool HostSocket::connected(const std::string& peer_key) const {
    return state_->routing_of.count(peer_key) > 0;
}

const Traffic& HostSocket::traffic() const {
    return state_->traffic;
}

}  // namespace arch::net
