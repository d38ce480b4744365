// net/host_socket.cpp: ROUTER + CURVE server + ZAP handler + monitor; routing by authenticated key;
// one live connection per key (the newest); the reader thread that keeps the socket drained, and the
// per-peer backlog it fills.
#include "net/host_socket.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <zmq.hpp>

#include "core/clock.h"
#include "core/error.h"
#include "net/endpoint.h"
#include "net/log_throttle.h"
#include "net/zap_handler.h"
#include "net/zmq_common.h"

#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN \
    93  // a DRAFT constant in libzmq 4.3 headers, accepted by stable builds
#endif

namespace arch::net {

// libzmq's I/O threads: each peer's connection is served (and its CURVE encrypted) by one of them, so
// with several, the state and the updates go to several peers at once on as many cores.
namespace {
int io_threads() { return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u)); }
}  // namespace

struct HostSocket::State {
    HostSocketOptions options;
    zmq::context_t context{io_threads()};
    std::unique_ptr<detail::ZapHandler> zap;
    std::string endpoint;

    // Everything below `socket_mutex` is touched by the reader thread and by send(): the socket is
    // used by one thread at a time, with the mutex as the fence libzmq asks for when a socket moves.
    mutable std::mutex socket_mutex;
    zmq::socket_t router;
    zmq::socket_t monitor;
    Traffic traffic;
    uint64_t sequence = 0;
    // A key keeps one live connection, its newest (docs/protocol.md, "What a message may cost").
    // Every TCP connection the listener accepted and libzmq has not reported gone, by fd, as the
    // monitor saw it (ZMQ_EVENT_ACCEPTED to ZMQ_EVENT_DISCONNECTED; libzmq reports the latter before it
    // closes the fd), and the routing id its messages carry once one of them has been read.
    struct Accepted {
        std::string ip, port;  // its other end, when the monitor reported it (empty: already gone)
        std::string local;     // this host's own address it came in on ("ip:port")
        std::string rid;
        uint64_t order = 0;  // the count of accepts so far, this one included
    };
    std::map<int, Accepted> accepted;
    uint64_t accepts = 0;
    // Every routing id a message came in on, until its connection is reported gone. `ip` and `port`
    // are set only where the message was certainly the accepted connection's (its Peer-Address is the
    // address accepted on that fd, and no newer routing id came in on it): only then may it be closed.
    struct Connection {
        std::string key;
        int fd = -1;
        std::string ip, port;
        std::string local;
        bool closing = false;
    };
    std::map<std::string, Connection> by_routing_id;  // routing id bytes -> connection
    std::map<std::string, std::string> routing_of;    // key -> its newest routing id (kept when it closes)
    std::map<std::string, uint64_t> routed_at;        // key -> the accepts counted when that id became its newest
    std::map<std::string, uint64_t> superseded;       // per key, older connections closed
    std::set<std::string> send_refused;               // keys whose last send found the queue full

    // What the reader has read and poll() has not taken yet.
    std::mutex queue_mutex;
    std::condition_variable queue_ready;
    std::deque<Incoming> pending;
    struct Backlog {
        std::size_t messages = 0, bytes = 0;
        uint64_t dropped = 0;
    };
    std::map<std::string, Backlog> backlog;  // by key, messages only (events are never dropped)
    struct ReaderLine {
        std::string text;
        bool outsider = false;  // about a connection from outside the allow-list: rate-limited
    };
    std::deque<ReaderLine> reader_log;  // lines for options.log, handed over on poll()'s thread
    uint64_t reader_left_out = 0;        // lines a full reader_log could not take
    std::unique_ptr<LogThrottle> outsiders;  // poll()'s thread only

    std::atomic<bool> quit{false};
    std::thread reader;

    ~State() {  // also runs when the constructor throws (e.g. the endpoint is in use)
        quit = true;
        if (reader.joinable()) reader.join();
        router.close();
        monitor.close();
        context.shutdown();  // makes the ZAP thread's recv return ETERM
        zap.reset();         // joins it
        context.close();
    }
    void log(const std::string& line) {
        if (options.log) options.log(line);
    }
    void log_from_reader(std::string line, bool outsider = false) {  // queue_mutex held
        if (reader_log.size() < 256) reader_log.push_back({std::move(line), outsider});  // a flood must not grow memory
        else ++reader_left_out;
    }
    void reader_says(std::string line, bool outsider = false) {
        std::lock_guard lock(queue_mutex);
        log_from_reader(std::move(line), outsider);
    }
    void drain_logs() {
        uint64_t zap_left_out = 0;
        for (auto& line : zap->take_log(zap_left_out))
            if (outsiders->admit()) log(line);
        outsiders->left_out(zap_left_out);
        std::deque<ReaderLine> lines;
        {
            std::lock_guard lock(queue_mutex);
            lines.swap(reader_log);
            outsiders->left_out(std::exchange(reader_left_out, 0));
        }
        for (auto& line : lines)
            if (!line.outsider || outsiders->admit()) log(line.text);
        const std::string summary = outsiders->summary("lines about failed handshakes and keys off the allow-list");
        if (!summary.empty()) log("host: " + summary);
    }
    void push(Incoming in);
    void handle_monitor_event(const detail::MonitorEvent& event);
    bool track(const std::string& rid, const std::string& key, int fd, const char* peer_ip);
    void close_connection(const std::string& rid);
    bool live(const std::string& key) const;  // its newest connection is open
    void receive_one();
    void read_loop();
};

void HostSocket::State::push(Incoming in) {
    std::lock_guard lock(queue_mutex);
    if (in.kind == Incoming::Kind::message) {
        Backlog& b = backlog[in.peer_key];
        if (b.messages + 1 > options.backlog_messages || b.bytes + in.payload.size() > options.backlog_bytes) {
            if (b.dropped++ % 1000 == 0)
                log_from_reader("host: peer " + fingerprint(in.peer_key) + " sends faster than the host reads (" +
                                std::to_string(b.messages) + " messages, " + std::to_string(b.bytes) +
                                " bytes waiting); dropped " + std::to_string(b.dropped) + " so far");
            traffic.dropped_messages += 1;  // the reader holds socket_mutex
            return;
        }
        b.messages += 1;
        b.bytes += in.payload.size();
    }
    pending.push_back(std::move(in));
    queue_ready.notify_one();
}

HostSocket::HostSocket(HostSocketOptions options) : state_(std::make_unique<State>()) {
    State& s = *state_;
    s.options = std::move(options);
    check_public_key(s.options.keys.public_key, "host public key");
    check_public_key(s.options.keys.secret_key, "host secret key");
    s.outsiders = std::make_unique<LogThrottle>(s.options.outsider_lines_per_window, s.options.outsider_window_s,
                                                *s.options.clock);
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
        ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
            ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    const std::string every_v4 = kEveryIpv4;
    bool bound = false;
    if (s.options.dual_stack && s.options.bind_endpoint.starts_with(every_v4)) {
        try {  // "*" with ZMQ_IPV6 is in6addr_any without IPV6_V6ONLY: IPv4 arrives mapped
            detail::set_int(s.router, ZMQ_IPV6, 1, "ZMQ_IPV6");
            s.router.bind("tcp://*:" + s.options.bind_endpoint.substr(every_v4.size()));
            bound = true;
        } catch (const zmq::error_t&) {  // no IPv6 here: as asked
            detail::set_int(s.router, ZMQ_IPV6, 0, "ZMQ_IPV6");
        }
    }
    try {
        if (!bound) s.router.bind(s.options.bind_endpoint);
    } catch (const zmq::error_t& e) {
        throw Error("cannot bind host socket to '" + s.options.bind_endpoint + "': " + e.what());
    }
    s.endpoint = s.router.get(zmq::sockopt::last_endpoint);
    s.reader = std::thread([&s] { s.read_loop(); });
}

HostSocket::~HostSocket() = default;

std::string HostSocket::endpoint() const {
    return state_->endpoint;
}

namespace {
// The numeric address and port of one end of a socket (the other end's, as libzmq writes a
// Peer-Address, or with `own` this end's); false when fd is not a connected socket (any more).
bool socket_address(int fd, std::string& ip, std::string& port, bool own = false) {
    sockaddr_storage addr{};
    socklen_t length = sizeof(addr);
    if ((own ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length)
             : ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &length)) != 0)
        return false;
    char host[NI_MAXHOST], service[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), length, host, sizeof(host), service, sizeof(service),
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    ip = host;
    port = service;
    return true;
}
// "ip:port", an IPv6 address in brackets (as an endpoint writes it); an IPv4 peer of a dual-stack
// listener (::ffff:a.b.c.d) as the IPv4 address it is.
std::string address_text(std::string ip, const std::string& port) {
    if (ip.empty()) return {};
    if (ip.starts_with("::ffff:") && ip.find('.') != std::string::npos) ip.erase(0, 7);
    return (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip) + ":" + port;
}
}  // namespace

void HostSocket::State::handle_monitor_event(const detail::MonitorEvent& event) {
    const int fd = static_cast<int>(event.value);
    if (event.event == ZMQ_EVENT_ACCEPTED) {
        // A connection already gone leaves no address, so it can never be closed by mistake. One whose
        // fd was closed and reused before this line ran has a DISCONNECTED and an ACCEPTED after this.
        Accepted connection;
        connection.order = ++accepts;
        (void)socket_address(fd, connection.ip, connection.port);
        std::string ip, port;
        if (socket_address(fd, ip, port, true)) connection.local = address_text(ip, port);
        accepted[fd] = std::move(connection);
        return;
    }
    if (event.event != ZMQ_EVENT_DISCONNECTED) {
        reader_says("host: " + detail::describe_handshake_failure(event), true);
        return;
    }
    accepted.erase(fd);
    for (auto it = by_routing_id.begin(); it != by_routing_id.end();) {
        if (it->second.fd != fd) {
            ++it;
            continue;
        }
        const std::string key = it->second.key;
        const auto current = routing_of.find(key);
        if (current != routing_of.end() && current->second == it->first) {
            reader_says("host: peer " + fingerprint(key) + " disconnected");
            Incoming event_out;
            event_out.kind = Incoming::Kind::disconnected;
            event_out.peer_key = key;
            push(std::move(event_out));
        }
        it = by_routing_id.erase(it);
    }
}

namespace {
// Whether routing id a belongs to a newer connection than b: libzmq's ROUTER numbers the connections
// it attaches (a zero byte, then a big-endian count); a routing id a peer chose itself has no order,
// and the one seen last counts as newer.
bool newer(const std::string& a, const std::string& b) {
    auto numbered = [](const std::string& rid) { return rid.size() == 5 && rid[0] == '\0'; };
    if (!numbered(a) || !numbered(b)) return true;
    return std::memcmp(a.data() + 1, b.data() + 1, 4) > 0;
}
}  // namespace

bool HostSocket::State::live(const std::string& key) const {
    const auto route = routing_of.find(key);
    return route != routing_of.end() && by_routing_id.count(route->second) > 0;
}

// A message came in on routing id `rid` from `key`: returns whether it is the key's newest connection,
// which gets the replies. A newer one closes the older ones; an older one still talking is closed.
bool HostSocket::State::track(const std::string& rid, const std::string& key, int fd, const char* peer_ip) {
    while (auto event = detail::read_monitor_event(monitor)) handle_monitor_event(*event);  // as of this message
    const auto [it, fresh] = by_routing_id.try_emplace(rid, Connection{key, fd, {}, {}, {}, false});
    const auto route = routing_of.find(key);
    if (fresh) {
        // Is it the connection accepted on this fd? Not a message read after its connection closed and
        // the fd went to another address; of two routing ids on one accept, the newer is its own; and a
        // routing id older than the key's newest is the fd's only if the fd was accepted before that
        // newest one spoke (else it is a late message of a closed connection, read after its fd went
        // to one that has not spoken yet, maybe from the same address).
        const auto at = accepted.find(fd);
        if (at != accepted.end() && !at->second.ip.empty() && peer_ip && at->second.ip == peer_ip &&
            (at->second.rid.empty() || newer(rid, at->second.rid)) &&
            (route == routing_of.end() || newer(rid, route->second) || at->second.order <= routed_at[key])) {
            if (const auto late = by_routing_id.find(at->second.rid); late != by_routing_id.end())
                late->second.ip.clear(), late->second.port.clear();
            at->second.rid = rid;
            it->second.ip = at->second.ip;
            it->second.port = at->second.port;
            it->second.local = at->second.local;
        }
    }
    if (route == routing_of.end()) {
        routing_of[key] = rid;
        routed_at[key] = accepts;
        return true;
    }
    if (route->second == rid) {
        if (!fresh) return true;
        by_routing_id.erase(it);  // a late message of the newest connection, reported gone since
        return false;
    }
    if (!newer(rid, route->second)) {  // an older connection: its messages count, it gets no replies
        close_connection(rid);
        return false;
    }
    close_connection(route->second);
    route->second = rid;
    routed_at[key] = accepts;
    return true;
}

void HostSocket::State::close_connection(const std::string& rid) {
    const auto it = by_routing_id.find(rid);
    if (it == by_routing_id.end() || it->second.closing) return;
    Connection& c = it->second;
    const auto at = accepted.find(c.fd);
    std::string ip, port;
    if (c.ip.empty() || at == accepted.end() || at->second.rid != rid || !socket_address(c.fd, ip, port) ||
        ip != c.ip || port != c.port) {
        by_routing_id.erase(it);  // gone already, or not certainly this connection: left alone, and forgotten
        return;
    }
    c.closing = true;
    ::shutdown(c.fd, SHUT_RDWR);  // libzmq reads the end, reports DISCONNECTED and frees the connection's pipes
    traffic.superseded_connections += 1;
    const uint64_t n = ++superseded[c.key];
    if (n == 1 || n % 100 == 0)
        reader_says("host: peer " + fingerprint(c.key) + " opened another connection; closed the older one (" + ip +
                    ":" + port + "; " + std::to_string(n) + " so far: a key keeps one)");
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
    // Read before the frame goes into the payload (accept_frame keeps it there, uncopied).
    const int source_fd = parts > 0 ? frame.get(ZMQ_SRCFD) : -1;
    const char* address = parts > 0 ? zmq_msg_gets(frame.handle(), "Peer-Address") : nullptr;
    const std::optional<std::string> peer_address = address ? std::optional<std::string>(address) : std::nullopt;
    Header header;
    Payload payload;
    if (reason.empty() &&
        !detail::accept_frame(frame, options.run_id, header, payload, traffic, reason)) {
        // accept_frame counted it as rejected
    } else if (!reason.empty()) {
        traffic.rejected_messages += 1;
        traffic.rejected_bytes += frame.size();
    }
    if (!reason.empty()) {
        const bool outsider = key.empty() || !zap->allow_list()->contains(key);
        reader_says("host: dropped a message from " +
                        (key.empty() ? std::string("an unknown peer") : "peer " + fingerprint(key)) + ": " + reason,
                    outsider);
        return;
    }
    const std::string rid = routing.to_string();
    const bool was_live = live(key);
    const std::string was_route = routing_of.count(key) ? routing_of[key] : std::string();
    // An older connection's messages still count (the key sent them), but it gets no replies.
    if (track(rid, key, source_fd, peer_address ? peer_address->c_str() : nullptr) &&
        (!was_live || was_route != rid)) {
        Incoming connected;
        connected.kind = Incoming::Kind::connected;
        connected.peer_key = key;
        if (const auto c = by_routing_id.find(rid); c != by_routing_id.end() && !c->second.ip.empty()) {
            connected.from = address_text(c->second.ip, c->second.port);
            connected.to = c->second.local;
        }
        push(std::move(connected));
    }
    Incoming message;
    message.peer_key = std::move(key);
    message.header = header;
    message.payload = std::move(payload);
    push(std::move(message));
}

void HostSocket::State::read_loop() {
    detail::block_signals_in_this_thread();
    int fds[2] = {-1, -1};
    {
        std::lock_guard lock(socket_mutex);
        fds[0] = router.get(zmq::sockopt::fd);
        fds[1] = monitor.get(zmq::sockopt::fd);
    }
    while (!quit) {
        {
            std::lock_guard lock(socket_mutex);
            try {
                // Bounded per pass so that send() gets the socket between passes.
                for (int i = 0; i < 1024 && (router.get(zmq::sockopt::events) & ZMQ_POLLIN); ++i) receive_one();
                while (auto event = detail::read_monitor_event(monitor)) handle_monitor_event(*event);
            } catch (const std::exception& e) {  // ETERM at shutdown, or no memory: say so, keep going
                if (quit) return;
                reader_says(std::string("host: reading the socket failed: ") + e.what());
            }
        }
        // ZMQ_FD is level-agnostic (it signals that ZMQ_EVENTS should be read again); wake at least
        // every 20 ms in case a send() on the other thread consumed that signal.
        pollfd pfd[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
        (void)::poll(pfd, 2, 20);  // EINTR: just go round
    }
}

std::optional<Incoming> HostSocket::poll(int timeout_ms) {
    State& s = *state_;
    const auto deadline = Clock::real().now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        s.drain_logs();
        {
            std::unique_lock lock(s.queue_mutex);
            // Wake at least every 100 ms so ZAP refusals reach the log while nothing else happens.
            const auto wake = std::min(deadline, Clock::real().now() + std::chrono::milliseconds(100));
            s.queue_ready.wait_until(lock, wake, [&] { return !s.pending.empty(); });
            if (!s.pending.empty()) {
                Incoming next = std::move(s.pending.front());
                s.pending.pop_front();
                if (next.kind == Incoming::Kind::message) {
                    State::Backlog& b = s.backlog[next.peer_key];
                    b.messages -= 1;
                    b.bytes -= next.payload.size();
                    if (b.messages == 0) s.backlog.erase(next.peer_key);
                }
                lock.unlock();
                s.drain_logs();
                return next;
            }
        }
        if (Clock::real().now() >= deadline) {
            s.drain_logs();
            return std::nullopt;
        }
    }
}

bool HostSocket::send(const std::string& peer_key, const Header& header,
                      std::span<const std::byte> payload) {
    return send(peer_key, header, Pieces(&payload, 1));
}

bool HostSocket::send(const std::string& peer_key, const Header& header, Pieces payload) {
    State& s = *state_;
    std::string failure;
    {
        std::lock_guard lock(s.socket_mutex);
        zmq::message_t frame =
            detail::build_frame(header, payload, s.options.run_id, ++s.sequence, s.options.limits);
        const std::size_t bytes = frame.size();
        const auto route = s.routing_of.find(peer_key);
        if (!s.live(peer_key)) {
            failure = "host: cannot send " + type_name(header.type) + " to peer " + fingerprint(peer_key) +
                      ": not connected";
        } else {
            try {
                // Never wait: a peer that does not read must not hold up the host's one event thread.
                if (!s.router.send(zmq::buffer(route->second), zmq::send_flags::sndmore | zmq::send_flags::dontwait) ||
                    !s.router.send(frame, zmq::send_flags::dontwait)) {
                    if (s.send_refused.insert(peer_key).second)  // once, until a send gets through again
                        failure = "host: peer " + fingerprint(peer_key) +
                                  " is not reading (its queue is full); holding what is queued for it";
                    else
                        return false;
                } else {
                    s.send_refused.erase(peer_key);
                    detail::count(s.traffic.sent, header.type, bytes);
                    return true;
                }
            } catch (const zmq::error_t& e) {  // EHOSTUNREACH: the connection went away
                failure = "host: cannot send to peer " + fingerprint(peer_key) + ": " + e.what();
            }
        }
    }
    s.log(failure);
    return false;
}

void HostSocket::set_allow_list(AllowList allow) {
    state_->zap->set_allow_list(std::move(allow));
}

bool HostSocket::connected(const std::string& peer_key) const {
    std::lock_guard lock(state_->socket_mutex);
    return state_->live(peer_key);
}

Traffic HostSocket::traffic() const {
    std::lock_guard lock(state_->socket_mutex);
    return state_->traffic;
}

}  // namespace arch::net
