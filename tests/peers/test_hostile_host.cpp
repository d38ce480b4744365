// tests/peers/test_hostile_host.cpp: a scripted host against a live `archipelago peer`, over the real
// CURVE socket with the run's own host key (issue 30, class 6). The host is a stranger to a peer too:
// a welcome for a model this machine cannot hold ends the peer with its reason before anything is
// allocated; blobs of a type the run never sends a peer, or larger than the run's messages can be, are
// refused at their begin; a state that does not decode is rejected; the peer stays alive, and its
// memory stays that of its tiny model.
#include <catch2/catch.hpp>

#include <thread>

#include "core/clock.h"
#include "net/allow_list.h"
#include "net/host_socket.h"
#include "net/transfer_wire.h"
#include "peers/cli/host_files.h"
#include "tests/peers/insider.h"

using namespace arch;
using namespace arch::test;

namespace {

// The run's real welcome, as `archipelago host` sends it to peer 1 (which then has to be started again).
std::vector<std::byte> real_welcome(Run& run) {
    auto host = run.host();
    HandPeer recorder(run, 1);
    protocol::Hello hello;
    hello.name = "recorder";
    recorder.link->send(recorder.host_key, protocol::Type::hello, 0, protocol::encode(hello));
    const std::optional<LinkEvent> welcome = recorder.wait_event(protocol::Type::welcome, 60);
    REQUIRE(welcome);
    recorder.leave();
    host->kill(SIGTERM);
    REQUIRE(host->wait(60) == 0);
    return welcome->payload;
}

// The host's side of the link, with the key, run id and allow-list `archipelago host` would use.
struct ScriptedHost {
    net::HostSocket socket;
    HostLink link;
    std::string peer;  // the key of the peer that said hello

    static net::HostSocketOptions options(const Run& run) {
        const RunConfig config = load_run_config(run.config);
        const cli::HostFiles files = cli::host_files(config);
        net::HostSocketOptions so;
        so.bind_endpoint = config.bind;
        so.keys = cli::ensure_host_key(files);
        so.allow = net::AllowList::load(files.allow_list);
        so.run_id = cli::ensure_run_id(files);
        so.log = [](const std::string&) {};
        return so;
    }
    explicit ScriptedHost(const Run& run) : socket(options(run)), link(socket, [](const std::string&) {}) {}

    // Waits for the peer's hello; false on timeout.
    bool hello(double timeout_s) {
        const auto end = Clock::real().now() + std::chrono::duration<double>(timeout_s);
        while (Clock::real().now() < end)
            if (const std::optional<LinkEvent> e = link.poll(50);
                e && e->kind == LinkEvent::Kind::message && e->type == protocol::Type::hello) {
                peer = e->peer;
                return true;
            }
        return false;
    }
    // Keeps the link moving (the peer's data requests are read and left unanswered) until `done()`.
    bool pump_until(const std::function<bool()>& done, double timeout_s) {
        const auto end = Clock::real().now() + std::chrono::duration<double>(timeout_s);
        while (Clock::real().now() < end) {
            if (done()) return true;
            link.poll(20);
        }
        return done();
    }
    void send_begin(protocol::Type type, uint64_t bytes) {
        net::Header h;
        h.type = net::kTransferBegin;
        const uint32_t chunk = 1u << 20;
        socket.send(peer, h, net::encode(net::BeginMsg{0xbad0 + bytes, bytes, chunk, static_cast<uint32_t>((bytes + chunk - 1) / chunk),
                                                       static_cast<uint32_t>(type), {}}));
    }
};

}  // namespace

TEST_CASE("a host whose welcome asks for more model than this machine holds: the peer ends with its reason") {
    Run run(2, 1);
    run.make_peer(1);
    const std::vector<std::byte> welcome_bytes = real_welcome(run);
    protocol::Welcome welcome = protocol::decode_welcome(welcome_bytes);
    // The same run, with GPT-3's shape: 175 billion parameters, 700 GB in fp32.
    std::string& toml = welcome.config_toml;
    toml.replace(toml.find("layers = 1"), 10, "layers = 96");
    toml.replace(toml.find("channels = 128"), 14, "channels = 12288");
    toml.replace(toml.find("heads = 2"), 9, "heads = 96");
    ScriptedHost host(run);
    auto peer = run.peer(1);
    REQUIRE(host.hello(60));
    host.link.send(host.peer, protocol::Type::welcome, 0, protocol::encode(welcome));
    const int code = peer->wait(60);
    INFO(peer->log());
    CHECK(code != 0);
    CHECK(code != -1000);  // it ended, and by itself
    CHECK(peer->log().find("this peer takes at most") != std::string::npos);  // the reason, as the user reads it
}

TEST_CASE("a host that sends blobs no run sends a peer, or larger than the run's: refused at their begin, the peer lives") {
    Run run(2, 1);
    run.make_peer(1);
    const std::vector<std::byte> welcome = real_welcome(run);
    ScriptedHost host(run);
    auto peer = run.peer(1);
    REQUIRE(host.hello(60));
    const uint64_t peak_joined = [&] {
        host.link.send(host.peer, protocol::Type::welcome, 0, welcome);
        REQUIRE(peer->wait_event({.kind = "joined"}, 60));
        return memory_of(peer->pid(), "VmHWM");
    }();
    // 1. A state declaring 4 GiB (the receiver's own limit): over what this run's state can be.
    host.send_begin(protocol::Type::state, 4ull << 30);
    // 2. A data reply of 64 MiB: over what one reply can carry.
    host.send_begin(protocol::Type::data, 64ull << 20);
    // 3. A pseudo-gradient: a blob only peers send.
    host.send_begin(protocol::Type::pseudo_grad, 1u << 20);
    auto refused = [&] { return peer->count({.kind = "transfer_refused"}) >= 3; };
    if (!host.pump_until(refused, 30)) FAIL(peer->log());
    CHECK(peer->count({.kind = "transfer_refused", .detail = "at most"}) == 2);
    CHECK(peer->count({.kind = "transfer_refused", .detail = "not taken here"}) == 1);
    // 4. A state within its size that does not decode: the message is rejected, nothing else.
    host.link.send_blob(host.peer, protocol::Type::state, 0, share_blob(std::vector<std::byte>(100)));
    if (!host.pump_until([&] { return peer->count({.kind = "rejected", .type = "state"}) >= 1; }, 30)) FAIL(peer->log());
    CHECK(peer->running());
    const uint64_t peak = memory_of(peer->pid(), "VmHWM");
    WARN("peer peak RSS after joining " << peak_joined / 1e6 << " MB, after the blobs " << peak / 1e6 << " MB");
    CHECK(peak < peak_joined + (32ull << 20));  // not a 4 GiB or a 64 MiB buffer: a few chunks in the socket at most
    peer->kill(SIGTERM);
    CHECK(peer->wait(60) == 0);
}
