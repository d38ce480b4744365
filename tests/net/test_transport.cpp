// tests/net/test_transport.cpp: HostSocket and PeerSocket over real sockets on 127.0.0.1:
// who gets in (allow-listed CURVE keys only), what gets through (valid frames of this run only),
// connection events (including a silent peer noticed by heartbeats) and the traffic counters; what
// the host logs of outsiders' failed handshakes is bounded; a key keeps one connection, its newest.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include "core/clock.h"
#include "net/message.h"
#include "net_fixture.h"
#include "tcp_recorder.h"
#include "tests/tcp_table.h"
#include "tests/test_bytes.h"

using namespace arch::net;
using namespace arch::net::test;

namespace {

constexpr uint16_t kHello = kFirstProtocolType + 1;
constexpr uint16_t kReport = kFirstProtocolType + 2;

Header header(uint16_t type, uint32_t round = 0) {
    Header h;
    h.type = type;
    h.round = round;
    return h;
}

using arch::test::text_of;

// A bare libzmq DEALER, optionally CURVE, for clients that misbehave below PeerSocket's API.
zmq::socket_t raw_dealer(zmq::context_t& ctx, const std::string& endpoint,
                         const std::string* server_key, const KeyPair* keys) {
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::reconnect_ivl, 50);
    if (server_key != nullptr) {
        s.set(zmq::sockopt::curve_serverkey, *server_key);
        s.set(zmq::sockopt::curve_publickey, keys->public_key);
        s.set(zmq::sockopt::curve_secretkey, keys->secret_key);
    }
    s.connect(endpoint);
    return s;
}

std::vector<std::byte> frame(uint16_t type, const std::string& payload, uint64_t run_id = kRunId) {
    Header h = header(type);
    h.run_id = run_id;
    return encode_message(h, arch::test::text_bytes(payload));
}

}  // namespace

TEST_CASE("only allow-listed CURVE clients get a message through", "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair(), good = generate_keypair(),
                  stranger = generate_keypair();
    AllowList allow;
    allow.add(good.public_key, "good");
    HostSocket host(host_options(host_keys, allow, log));

    PeerSocket good_peer(peer_options(host.endpoint(), host_keys.public_key, good, log));
    REQUIRE(good_peer.send(header(kHello), arch::test::text_bytes("good-1")));
    auto first = next_message(host);
    REQUIRE(first);
    CHECK(first->peer_key == good.public_key);
    CHECK(text_of(first->payload) == "good-1");

    // Three bad clients try at once: an unlisted key, no CURVE at all, and a wrong host key.
    LogSink stranger_log;
    PeerSocket unlisted(
        peer_options(host.endpoint(), host_keys.public_key, stranger, stranger_log));
    unlisted.send(header(kHello), arch::test::text_bytes("from-unlisted"));
    zmq::context_t ctx;
    zmq::socket_t plain = raw_dealer(ctx, host.endpoint(), nullptr, nullptr);
    plain.send(zmq::buffer(frame(kHello, "from-plain")), zmq::send_flags::dontwait);
    PeerSocket wrong_server(
        peer_options(host.endpoint(), generate_keypair().public_key, good, log));
    wrong_server.send(header(kHello), arch::test::text_bytes("from-wrong-server-key"));

    // Meanwhile the good peer keeps talking; the host must see only its messages.
    int good_seen = 0, sent = 1;
    const bool all_refusals_logged = wait_for([&] {
        if (sent - good_seen < 3 && sent < 200)
            good_peer.send(header(kHello), arch::test::text_bytes("good-" + std::to_string(++sent)));
        if (auto in = host.poll(20); in && in->kind == Incoming::Kind::message) {
            CHECK(in->peer_key == good.public_key);
            CHECK(text_of(in->payload).rfind("good-", 0) == 0);
            ++good_seen;
        }
        (void)unlisted.poll(0);
        (void)good_peer.poll(0);
        // The plain client is refused for a mechanism mismatch; if it notices first and hangs up,
        // the host sees the handshake cut short instead.
        return log.contains("is not on the allow-list") &&
               (log.contains("mechanism mismatch") ||
                log.contains("closed during the handshake")) &&
               log.contains("cryptographic error") && stranger_log.contains("host refused our key");
    });
    INFO(log.all() << stranger_log.all());
    CHECK(all_refusals_logged);
    CHECK(good_seen >= 1);
    CHECK(log.contains(fingerprint(stranger.public_key)));
    CHECK_FALSE(unlisted.connected());
    CHECK_FALSE(wrong_server.connected());
    CHECK(good_peer.connected());
    CHECK(host.traffic().rejected_messages == 0);  // nothing of theirs even reached validation
}

TEST_CASE("a peer refused at the handshake dials again and gets in once the host allows its key", "[net][transport]") {
    LogSink log, peer_log;
    const KeyPair host_keys = generate_keypair(), late = generate_keypair();
    HostSocket host(host_options(host_keys, AllowList{}, log));
    PeerSocket peer(peer_options(host.endpoint(), host_keys.public_key, late, peer_log));
    REQUIRE(wait_for([&] {
        (void)host.poll(10);
        (void)peer.poll(10);
        return peer_log.contains("host refused our key");
    }));
    AllowList allow;  // the host reads the peer's invite now (archipelago invite while it runs)
    allow.add(late.public_key, "late");
    host.set_allow_list(allow);
    bool in = false;
    const bool got_in = wait_for([&] {
        if (peer.connected()) (void)peer.send(header(kHello), arch::test::text_bytes("at last"));
        if (auto e = host.poll(20); e && e->kind == Incoming::Kind::message && e->peer_key == late.public_key) in = true;
        (void)peer.poll(0);
        return in;
    });
    INFO(log.all() << peer_log.all());
    CHECK(got_in);
    CHECK(peer_log.contains("again after its refusal"));
}

TEST_CASE("a host that cannot bind says so and cleans up", "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair();
    HostSocket first(host_options(host_keys, AllowList{}, log));
    HostSocketOptions again = host_options(host_keys, AllowList{}, log);
    again.bind_endpoint = first.endpoint();
    CHECK_THROWS_WITH(HostSocket(again), Catch::Contains("cannot bind host socket"));
    HostSocketOptions bad_keys = host_options(host_keys, AllowList{}, log);
    bad_keys.keys.secret_key = "short";
    CHECK_THROWS_WITH(HostSocket(bad_keys), Catch::Contains("host secret key"));
}

TEST_CASE("malformed frames from an authenticated peer are dropped with a reason",
          "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair(), client = generate_keypair();
    AllowList allow;
    allow.add(client.public_key, "client");
    HostSocket host(host_options(host_keys, allow, log));
    zmq::context_t ctx;
    zmq::socket_t raw = raw_dealer(ctx, host.endpoint(), &host_keys.public_key, &client);

    auto send_raw = [&](const std::vector<std::byte>& bytes) {
        raw.send(zmq::buffer(bytes), zmq::send_flags::none);
    };
    send_raw(frame(kHello, "first"));
    auto in = next_message(host);
    REQUIRE(in);
    CHECK(text_of(in->payload) == "first");

    auto bad_magic = frame(kHello, "x");
    bad_magic[1] ^= std::byte{0x55};
    auto bad_version = frame(kHello, "x");
    bad_version[4] = std::byte{9};
    auto bad_length = frame(kHello, "xyz");
    bad_length.pop_back();
    send_raw(arch::test::text_bytes("complete garbage, not a header at all"));
    send_raw(bad_magic);
    send_raw(bad_version);
    const auto whole = frame(kHello, "x");
    send_raw(std::vector<std::byte>(whole.begin(), whole.begin() + 20));
    send_raw(bad_length);
    send_raw(frame(kHello, "other run", kRunId + 1));
    raw.send(zmq::buffer(frame(kHello, "part 1")), zmq::send_flags::sndmore);
    raw.send(zmq::buffer(frame(kHello, "part 2")), zmq::send_flags::none);
    send_raw(frame(kHello, "after the garbage"));

    in = next_message(host);
    REQUIRE(in);
    CHECK(text_of(in->payload) == "after the garbage");
    INFO(log.all());
    CHECK(host.traffic().rejected_messages == 7);
    CHECK(log.contains("bad magic"));
    CHECK(log.contains("unsupported message version 9"));
    CHECK(log.contains("truncated header"));
    CHECK(log.contains("length mismatch"));
    CHECK(log.contains("wrong run id"));
    CHECK(log.contains("expected 1 frame after the routing id, found 2"));

    SECTION("an oversized frame drops the connection, and nothing of it arrives") {
        const std::string big(5 << 20, 'B');  // over the 4 MiB max_message_bytes of test_limits()
        send_raw(frame(kHello, big));
        bool disconnected = false;
        REQUIRE(wait_for([&] {
            auto e = host.poll(50);
            if (e && e->kind == Incoming::Kind::message) FAIL("oversized message was delivered");
            disconnected = disconnected || (e && e->kind == Incoming::Kind::disconnected);
            return disconnected;
        }));
        CHECK(log.contains("disconnected"));
        send_raw(frame(kHello, "back again"));  // libzmq reconnects the raw socket by itself
        in = next_message(host);
        REQUIRE(in);
        CHECK(text_of(in->payload) == "back again");
    }
    SECTION("plain TCP garbage (not even ZMTP) does not disturb the host") {
        const auto port = static_cast<uint16_t>(
            std::stoi(host.endpoint().substr(host.endpoint().rfind(':') + 1)));
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(port);
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
        const std::string junk(4096, '\xff');
        CHECK(::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL) > 0);
        send_raw(frame(kHello, "still fine"));
        in = next_message(host);
        REQUIRE(in);
        CHECK(text_of(in->payload) == "still fine");
        ::close(fd);
    }
}

TEST_CASE("the host sees peers connect, leave, and go silent", "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair(), a = generate_keypair();
    AllowList allow;
    allow.add(a.public_key, "a");
    HostSocket host(host_options(host_keys, allow, log));
    TcpRecorder relay(
        static_cast<uint16_t>(std::stoi(host.endpoint().substr(host.endpoint().rfind(':') + 1))));

    auto next_event = [&](Incoming::Kind kind, int timeout_ms) {
        bool seen = false;
        wait_for(
            [&] {
                auto e = host.poll(20);
                seen = e && e->kind == kind && e->peer_key == a.public_key;
                return seen;
            },
            timeout_ms);
        return seen;
    };
    {
        PeerSocket peer(peer_options(relay.endpoint(), host_keys.public_key, a, log));
        REQUIRE(wait_for([&] { return peer.poll(20) && peer.connected(); }));
        peer.send(header(kHello), arch::test::text_bytes("hi"));
        CHECK(next_event(Incoming::Kind::connected, 5000));
        CHECK(host.connected(a.public_key));
        // Host replies by key.
        REQUIRE(host.send(a.public_key, header(kReport, 3), arch::test::text_bytes("welcome")));
        auto reply = next_message(peer);
        REQUIRE(reply);
        CHECK(reply->header.round == 3);
        CHECK(reply->peer_key == host_keys.public_key);
        CHECK(text_of(reply->payload) == "welcome");

        SECTION("a peer that goes silent is dropped within the heartbeat timeout") {
            relay.freeze();
            const auto start = std::chrono::steady_clock::now();
            CHECK(next_event(Incoming::Kind::disconnected, 5000));
            const auto took = std::chrono::steady_clock::now() - start;
            CHECK(took < std::chrono::milliseconds(test_limits().heartbeat_timeout_ms + 1500));
            CHECK_FALSE(host.connected(a.public_key));
            CHECK_FALSE(host.send(a.public_key, header(kReport), arch::test::text_bytes("anyone?")));
            relay.resume();
            relay.cut();  // let the peer notice and reconnect (backoff) on a fresh connection
            REQUIRE(wait_for([&] {
                peer.poll(20);
                return peer.connected();
            }));
            peer.send(header(kHello), arch::test::text_bytes("back"));
            auto in = next_message(host);
            REQUIRE(in);
            CHECK(text_of(in->payload) == "back");
        }
        SECTION("removing a key from the allow-list stops its messages") {
            host.set_allow_list(AllowList{});
            peer.send(header(kHello), arch::test::text_bytes("still here?"));
            CHECK(wait_for([&] {
                host.poll(20);
                return log.contains("no longer on the allow-list");
            }));
        }
    }
    SECTION("a peer that closes its socket is reported at once") {
        CHECK(next_event(Incoming::Kind::disconnected, 3000));
    }
}

TEST_CASE("bytes are counted per message type, as sent on the wire", "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair(), a = generate_keypair();
    AllowList allow;
    allow.add(a.public_key, "a");
    HostSocket host(host_options(host_keys, allow, log));
    TcpRecorder relay(
        static_cast<uint16_t>(std::stoi(host.endpoint().substr(host.endpoint().rfind(':') + 1))));
    PeerSocket peer(peer_options(relay.endpoint(), host_keys.public_key, a, log));

    uint64_t hello_bytes = 0, report_bytes = 0;
    for (int i = 0; i < 20; ++i) {
        const std::string payload(static_cast<std::size_t>(100 * i + 1), 'p');
        const uint16_t type = i % 3 == 0 ? kReport : kHello;
        REQUIRE(peer.send(header(type), arch::test::text_bytes(payload)));
        (type == kReport ? report_bytes : hello_bytes) += kHeaderBytes + payload.size();
    }
    for (int i = 0; i < 20; ++i) REQUIRE(next_message(host));
    REQUIRE(host.send(a.public_key, header(kReport), arch::test::text_bytes(std::string(50000, 'r'))));
    REQUIRE(next_message(peer));

    const auto& sent = peer.traffic().sent;
    CHECK(sent.at(kHello).bytes == hello_bytes);
    CHECK(sent.at(kReport).bytes == report_bytes);
    CHECK(sent.at(kHello).messages + sent.at(kReport).messages == 20);
    CHECK(host.traffic().received.at(kHello).bytes == hello_bytes);
    CHECK(host.traffic().received.at(kReport).bytes == report_bytes);
    CHECK(host.traffic().sent.at(kReport).bytes == kHeaderBytes + 50000);
    CHECK(peer.traffic().received.at(kReport).bytes == kHeaderBytes + 50000);

    // What crossed the wire is the counted bytes plus CURVE framing (about 40 bytes per message),
    // the handshake and heartbeats: never less, and not much more.
    const uint64_t counted = peer.traffic().bytes_sent() + host.traffic().bytes_sent();
    const uint64_t wire = relay.recorded_size();
    CHECK(wire > counted);
    CHECK(wire < counted + 21 * 64 + 16384);
}

TEST_CASE("outsiders' failed handshakes are logged at a bounded rate, the rest counted in one line", "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair();
    arch::ManualClock clock;
    HostSocketOptions options = host_options(host_keys, AllowList{}, log);
    options.clock = &clock;  // the window ends when the test says so
    HostSocket host(options);
    const int port = std::stoi(host.endpoint().substr(host.endpoint().rfind(':') + 1));

    // 200 raw TCP connections that send bytes no ZMTP peer would, and hang up; and 20 CURVE clients
    // with keys the allow-list does not hold (libzmq does not retry a handshake the ZAP handler refused).
    LogSink stranger_log;
    std::vector<std::unique_ptr<PeerSocket>> strangers;
    constexpr int kStrangers = 20;
    for (int i = 0; i < kStrangers; ++i)
        strangers.push_back(std::make_unique<PeerSocket>(
            peer_options(host.endpoint(), host_keys.public_key, generate_keypair(), stranger_log)));
    constexpr int kRaw = 200;
    for (int i = 0; i < kRaw; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
            const char garbage[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n\x1b[31m not a greeting";
            (void)::send(fd, garbage, sizeof(garbage) - 1, MSG_NOSIGNAL);
        }
        ::close(fd);
        (void)host.poll(0);
    }
    const auto outsider_lines = [&] {
        return log.count("refused a connection") + log.count("handshake") + log.count("closed during") +
               log.count("mechanism") + log.count("protocol");
    };
    // Every stranger is refused; what the host logs of it all stays at the window's 10.
    if (!wait_for([&] {
            (void)host.poll(20);
            for (auto& s : strangers) (void)s->poll(0);
            return stranger_log.count("host refused our key") >= kStrangers;
        }))
        FAIL(log.all() + "--- the stranger\n" + stranger_log.all());
    for (int i = 0; i < 20; ++i) (void)host.poll(10);
    INFO(log.all());
    CHECK(outsider_lines() <= 10);
    CHECK(outsider_lines() >= 1);
    CHECK_FALSE(log.contains("more lines about failed handshakes"));  // the window has not ended

    // Once it has, one line says how many were left out: each stranger makes two (the ZAP handler's
    // refusal and the failed handshake), the raw connections none (libzmq reports no handshake for them).
    clock.advance(61);
    REQUIRE(wait_for([&] {
        (void)host.poll(20);
        return log.contains("more lines about failed handshakes");
    }));
    const std::string all = log.all();
    const std::size_t at = all.find("more lines about failed handshakes");
    const std::size_t start = all.rfind("host: ", at) + 6;
    CHECK(std::stoul(all.substr(start, at - start)) + 10 >= 2 * kStrangers);
}

TEST_CASE("a key holds one connection at the host, its newest; the older ones are closed with their queues",
          "[net][transport]") {
    LogSink log;
    const KeyPair host_keys = generate_keypair(), a = generate_keypair(), b = generate_keypair();
    AllowList allow;
    allow.add(a.public_key, "a");
    allow.add(b.public_key, "b");
    HostSocket host(host_options(host_keys, allow, log));
    const int port = std::stoi(host.endpoint().substr(host.endpoint().rfind(':') + 1));
    auto socket_of = [&](const KeyPair& keys) {
        PeerSocketOptions o = peer_options(host.endpoint(), host_keys.public_key, keys, log);
        o.limits.reconnect_ivl_ms = o.limits.reconnect_ivl_max_ms = 60000;  // a closed one stays closed here
        o.limits.queue_messages = 1;  // reads next to nothing: what the host sends it waits at the host
        o.limits.heartbeat_ivl_ms = 0;
        return std::make_unique<PeerSocket>(o);
    };
    auto says = [&](PeerSocket& socket, const std::string& text) {
        REQUIRE(wait_for([&] { return socket.poll(20) || socket.connected(); }));
        REQUIRE(socket.send(header(kHello), arch::test::text_bytes(text)));
        auto in = next_message(host);
        REQUIRE(in);
        CHECK(text_of(in->payload) == text);
    };
    // An innocent key first, then key a on six connections, each speaking once; the host sends a
    // megabyte a time to a's newest connection, which does not read.
    auto innocent = socket_of(b);
    says(*innocent, "b");
    std::vector<std::unique_ptr<PeerSocket>> sockets;
    const std::vector<std::byte> megabyte(1u << 20);
    for (int i = 0; i < 6; ++i) {
        sockets.push_back(socket_of(a));
        says(*sockets.back(), "a" + std::to_string(i));
        for (int m = 0; m < 3; ++m) CHECK(host.send(a.public_key, header(kReport), megabyte));
    }
    // Each older connection of a is closed: the kernel holds two connections at the host, a's newest
    // and b's. (The closed sockets are not read again: libzmq 4.3 aborts when a connection whose input
    // it stopped is closed and then read, zeromq/libzmq#4364, so they send no heartbeats either.)
    CHECK(wait_for([&] {
        host.poll(20);
        return arch::test::established_at(port) == 2;
    }, 5000));
    CHECK(host.traffic().superseded_connections == 5);
    CHECK(log.count("closed the older one") == 1);  // the first, then every hundredth
    // Replies go to the newest; b was never touched.
    CHECK(host.connected(a.public_key));
    REQUIRE(host.send(b.public_key, header(kReport, 7), arch::test::text_bytes("still yours")));
    auto reply = next_message(*innocent);
    REQUIRE(reply);
    CHECK(text_of(reply->payload) == "still yours");
    CHECK(innocent->connected());
    int newest_got = 0;
    wait_for([&] {
        auto in = sockets.back()->poll(20);
        newest_got += in && in->kind == Incoming::Kind::message;
        return newest_got == 3;
    }, 5000);
    CHECK(newest_got == 3);
}
