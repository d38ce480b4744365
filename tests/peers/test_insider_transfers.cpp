// tests/peers/test_insider_transfers.cpp: an invited peer that abuses the transfer protocol against a
// live host, with real CURVE sockets, next to honest `archipelago peer` processes (issue 30, classes
// 1, 2, 3 and 5). Floods of transfer-status, credit and begin messages must cost the host about what they
// carry: what it sends the attacker stays within one state, its CPU time and memory stay near the
// calm run's, and the honest rounds keep their pace. Control messages that carry no payload must not
// hold a round open past its deadline. An island that announces its pseudo-gradient early cannot
// pass for the fastest and cut the other islands' local steps (class 5). Many connections with one key
// hold one connection's queue at the host (class 3).
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>

#include "core/checkpoint.h"
#include "core/clock.h"
#include "net/message.h"
#include "net/transfer_blocking.h"
#include "net/transfer_wire.h"
#include "tests/peers/insider.h"
#include "tests/tcp_table.h"

using namespace arch;
using namespace arch::test;

namespace {

double seconds_since(Clock::time_point t) { return Clock::real().seconds_since(t); }

// Reads what the host sent this socket until nothing is left; returns the payload bytes read.
uint64_t drain(net::PeerSocket& socket) {
    uint64_t bytes = 0;
    for (int i = 0; i < 10000; ++i) {
        const std::optional<net::Incoming> in = socket.poll(0);
        if (!in) break;
        bytes += in->payload.size();
    }
    return bytes;
}


// A live host beside two honest peers (3 islands; peer 3's key is the test's), θ about 20 MB (channels
// 384: 20 chunks), and the figures of its calm run, rounds 4 to `calm_to`: pace, the host's CPU time a
// second and its peak memory, which creeps up over the first tens of rounds. They go to the test's
// output as well (WARN): issue 30's table is made of them.
struct CalmRun {
    Run run;
    std::unique_ptr<Process> host;
    std::vector<std::unique_ptr<Process>> honest;
    double pace = 0, cpu_rate = 0;
    uint64_t peak = 0;
    CalmRun(const std::string& deadlines, int calm_to) : run(400, 3, 384, deadlines) {
        for (int i = 1; i <= 3; ++i) run.make_peer(i);
        host = run.host();
        for (int i = 1; i <= 2; ++i) honest.push_back(run.peer(i));
        if (!host->wait_event({.kind = "round_started"}, 180, 4)) FAIL(diagnostics());
        const int from = rounds();
        const double cpu_from = cpu_seconds_of(host->pid());
        const auto calm = Clock::real().now();
        if (!host->wait_event({.kind = "round_started"}, 180, calm_to)) FAIL(diagnostics());
        const double calm_s = seconds_since(calm);
        pace = (rounds() - from) / calm_s;
        cpu_rate = (cpu_seconds_of(host->pid()) - cpu_from) / calm_s;
        peak = memory_of(host->pid(), "VmHWM");
        WARN("calm: " << pace << " rounds/s, host " << cpu_rate << " CPU s/s, peak RSS " << peak / 1e6 << " MB");
    }
    std::string diagnostics() const { return host->log() + "\n--- peer 1\n" + honest[0]->log(); }
    int rounds() const { return host->count({.kind = "round_started"}); }
};

}  // namespace

TEST_CASE("an insider's transfer-status, credit and begin floods cost the host what they carry") {
    // A state re-sent, or a begin's declared size zero-filled, shows in the host's CPU time and memory.
    // The calm run: rounds 4 to 40, about as long as the attack.
    CalmRun calm("join_timeout_s = 5\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n", 40);
    Run& run = calm.run;
    auto& host = calm.host;
    auto& honest = calm.honest;
    auto diagnostics = [&] { return calm.diagnostics(); };
    auto rounds = [&] { return calm.rounds(); };
    const double calm_pace = calm.pace, calm_cpu_rate = calm.cpu_rate;
    const uint64_t peak_before = calm.peak;

    // The attacker joins: the host begins sending it the state.
    auto attacker = raw_socket(run, 3);
    protocol::Hello hello;
    hello.name = "attacker";
    REQUIRE(send_raw(*attacker, static_cast<uint16_t>(protocol::Type::hello), protocol::encode(hello)));
    std::optional<net::BeginMsg> state;
    const auto joined = Clock::real().now();
    while (!state && seconds_since(joined) < 60) {
        const std::optional<net::Incoming> in = attacker->poll(100);
        std::string error;
        if (in && in->header.type == net::kTransferBegin) state = net::decode_begin(in->payload, error);
    }
    REQUIRE(state);
    REQUIRE(state->tag == static_cast<uint32_t>(protocol::Type::state));
    const uint64_t params = (state->total_bytes - 64) / 4;  // about: the state is θ and a header
    INFO("the state: " << state->total_bytes << " bytes in " << state->chunk_count << " chunks");

    const int attack_from = rounds();
    const double attack_cpu_from = cpu_seconds_of(host->pid());
    const auto attack = Clock::real().now();
    uint64_t received = 0;  // payload bytes the host sent the attacker
    // 8,000 messages over about 10 s, read between them: the attack lasts several honest rounds.
    uint32_t sent = 0;
    auto paced = [&] {
        received += drain(*attacker);
        std::this_thread::sleep_until(attack + std::chrono::microseconds(1250 * ++sent));
    };
    // 1. 3,000 statuses, each asking for every chunk again with a window of a million: an answer to no
    //    begin but the first.
    const std::vector<bool> none(state->chunk_count, false);
    for (uint32_t i = 0; i < 3000 && host->running(); ++i) {
        if (!send_raw(*attacker, net::kTransferStatus, net::encode(net::StatusMsg{state->id, 1 + i, 1000000, none}))) break;
        paced();
    }
    // 2. 3,000 credits of a million chunks, each asking for chunk 0 again.
    for (uint32_t i = 0; i < 3000 && host->running(); ++i) {
        if (!send_raw(*attacker, net::kTransferCredit, net::encode(net::CreditMsg{state->id, 1, 1000000, 0}))) break;
        paced();
    }
    // 3. 2,000 pseudo-gradient begins, each a new id declaring what the run allows (twice θ in fp32).
    for (uint64_t i = 0; i < 2000 && host->running(); ++i) {
        const uint64_t total = 8 * params;
        const uint32_t chunk = 1u << 20;
        const net::BeginMsg begin{0x7000 + i, total, chunk, static_cast<uint32_t>((total + chunk - 1) / chunk),
                                  static_cast<uint32_t>(protocol::Type::pseudo_grad), {}};
        if (!send_raw(*attacker, net::kTransferBegin, net::encode(begin))) break;
        paced();
    }
    const auto end = Clock::real().now() + std::chrono::seconds(2);  // what is still on its way
    while (Clock::real().now() < end) received += drain(*attacker), std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const double attack_s = seconds_since(attack);
    const double attack_cpu = cpu_seconds_of(host->pid()) - attack_cpu_from;
    const double attack_pace = (rounds() - attack_from) / attack_s;
    const uint64_t peak_after = memory_of(host->pid(), "VmHWM");
    WARN("attack (" << attack_s << " s): " << attack_pace << " rounds/s, host " << attack_cpu << " CPU s (calm: "
                    << calm_cpu_rate * attack_s << "), peak RSS " << peak_after / 1e6 << " MB; the attacker got "
                    << received / 1e6 << " MB");
    if (!host->running()) FAIL(diagnostics());

    // What the attacker got: the state's first window of chunks, and a chunk per budgeted message at
    // most; not a state per message.
    CHECK(received < 2 * state->total_bytes);
    const bool sanitized = std::getenv("ARCH_SANITIZED") != nullptr;
    if (!sanitized) {
        // The host's CPU goes to honest rounds: what the calm run spent per round, for as many rounds,
        // and the attack's 8,000 small messages (decrypted, decoded, refused): well under 2 s on this
        // machine. Re-sending the state per status (before: 3.3 GB to the attacker) does not fit.
        const double calm_cpu_per_round = calm_cpu_rate / calm_pace;
        CHECK(attack_cpu < 1.5 * calm_cpu_per_round * (rounds() - attack_from) + 2.0);
        // Memory: the state the attacker joined for, pinned by its queue (it never says done), so the
        // next state and the checkpoint's need fresh memory beside it (docs/run-config.md: a state of
        // an older θ still sent), its connection's allowance, and the host's peak, which moves by a
        // few states between honest rounds on its own (its RSS swings by 100 MB at this size, and the
        // peak follows the swings' coincidences). The old link gave +235 MB here; a state queued per
        // status, or 2,000 begins' declared sizes held, would be gigabytes.
        constexpr uint64_t kConnectionAllowance = 28ull << 20;
        CHECK(peak_after < peak_before + 6 * state->total_bytes + kConnectionAllowance);
        CHECK(attack_pace > calm_pace / 3);
    }
    CHECK(attack_pace > 0);
    CHECK(host->count({.kind = "over_budget", .type = "transfer"}) >= 1);

    stop_cleanly(*host, honest);
    CHECK(honest[0]->count({.kind = "theta_differs"}) == 0);
    const std::string model = run.dir.file("host") + "/model.bin";
    const std::vector<float> theta = read_checkpoint_params(model, read_checkpoint_config(model));
    CHECK(std::all_of(theta.begin(), theta.end(), [](float v) { return std::isfinite(v); }));
}

TEST_CASE("begins that carry no payload do not hold a round open past its deadline") {
    // Two islands: an honest peer and this test, in sync, started on every round. Round 2's Δ is
    // never sent: a begin with a new id every half second stands in for it.
    constexpr int kRoundTimeout = 4;
    Run run(4, 2, 128, "join_timeout_s = 60\nround_timeout_s = " + std::to_string(kRoundTimeout) + "\nheartbeat_timeout_s = 2\n");
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto peer = run.peer(1);
    HandPeer liar(run, 2);
    const std::size_t params = liar.join("liar");
    protocol::RoundStart rs = liar.wait_round_start();
    liar.send_grad(rs.round, std::vector<float>(params, 1e-4f), 32.0);  // the first round: an honest Δ
    const std::optional<LinkEvent> update = liar.wait_event(protocol::Type::update, 60);
    REQUIRE(update);
    ByteReader reader(update->payload, "update");
    const protocol::UpdateMeta meta = protocol::decode_update(reader.bytes(4096));
    liar.report(meta.round + 1, meta.theta_hash);  // in sync: started on the next round
    rs = liar.wait_round_start();
    const auto opened = Clock::real().now();
    // 1 MiB declared: the link's cap for a blob that size (twice its bytes at 100 kB/s, and the margin)
    // is 25 s after the first begin; without progress it is dead after the margin, 4 s.
    bool closed = false;
    for (uint64_t i = 0; i < 120 && !closed; ++i) {
        const net::BeginMsg begin{0x9000 + i, 1u << 20, 1u << 20, 1, static_cast<uint32_t>(protocol::Type::pseudo_grad), {}};
        send_raw(*liar.socket, net::kTransferBegin, net::encode(begin), rs.round);
        closed = host->wait_event({.kind = "round_finished", .round = static_cast<int64_t>(rs.round)}, 0.5);
    }
    const double held_s = seconds_since(opened);
    WARN("round " << rs.round << " closed " << held_s << " s after it opened (deadline " << kRoundTimeout << " s)");
    INFO(host->log());
    REQUIRE(closed);
    // The deadline, and at most the margin after the first begin, which came at once.
    CHECK(held_s < kRoundTimeout + 2 * 2 + 3);
    CHECK(host->count({.kind = "deadline_passed", .round = static_cast<int64_t>(rs.round)}) == 1);
    host->kill(SIGTERM);
    peer->kill(SIGTERM);
    host->wait(60);
    peer->wait(60);
}

TEST_CASE("an island that sends its begin early cannot pass for the fastest and cut the others' local steps") {
    // Async, Dynamic Local Updates: each island's H is H · its speed / the fastest's, speeds measured
    // by the host. The liar's link announces each Δ the moment its round starts, and its chunks go
    // 2.5 s later (its link is not polled until then, so the host's status waits): counted from the
    // begin, its time on the wire would hide those 2.5 s of "compute", the liar would look hundreds
    // of times faster than the honest island, and the honest island's H would fall to 1.
    Run run(400, 2);
    run.make_async();
    for (int i = 1; i <= 2; ++i) run.make_peer(i);
    auto host = run.host();
    HandPeer liar(run, 2);
    const std::size_t params = liar.join("liar");
    // Throttled to a few rounds a second, at least 10 times the liar's 3 steps in 2.5 s however busy
    // this machine is; the updates the liar misses while it waits are replaced by the state.
    auto honest = run.peer(1, kEnv, {"--throttle", "0.1"});
    // The liar's next round_start; every update or state on the way is reported, as an honest peer would.
    auto next_start = [&]() -> protocol::RoundStart {
        const auto end = Clock::real().now() + std::chrono::seconds(120);
        while (Clock::real().now() < end) {
            const std::optional<LinkEvent> e = liar.link->poll(50);
            if (!e || e->kind != LinkEvent::Kind::message) continue;
            if (e->type == protocol::Type::round_start) return protocol::decode_round_start(e->payload);
            ByteReader reader(e->payload, "blob");
            if (e->type == protocol::Type::update) {
                const protocol::UpdateMeta meta = protocol::decode_update(reader.bytes(4096));
                liar.report(meta.round + 1, meta.theta_hash);
            } else if (e->type == protocol::Type::state) {
                const protocol::StateMeta meta = protocol::decode_state(reader.bytes(4096));
                liar.report(meta.round, meta.theta_hash);
            }
        }
        FAIL("no round_start for the liar\n" << host->log());
        return {};
    };
    protocol::RoundStart rs = next_start();
    for (int n = 0; n < 3; ++n) {
        liar.send_grad(rs.round, std::vector<float>(params, 1e-5f), 32.0);  // the begin goes out now
        std::this_thread::sleep_for(std::chrono::milliseconds(2500));     // the chunks, once polled
        rs = next_start();
    }
    INFO(honest->log());
    // Every round the honest island ran after the liar's first Δ was measured ran the full H.
    int rounds = 0;
    for (const RunEvent& e : honest->events()) {
        if (e.kind != "sent") continue;
        ++rounds;
        CHECK(e.steps == 3);
    }
    CHECK(rounds >= 3);
    INFO(host->log());
    WARN("the honest island ran " << rounds << " rounds of 3 steps; the liar is given " << rs.steps);
    // The liar: 2.5 s for 3 steps, against a fraction of a second for the honest island: it runs fewer.
    CHECK(rs.steps < 3);
    host->kill(SIGTERM);
    honest->kill(SIGTERM);
    host->wait(60);
    honest->wait(60);
}

TEST_CASE("an insider's many connections hold one connection's queue at the host, not one per connection") {
    // Class 3. Each connection says hello, gets the begin of what the host queues for it (the state, or
    // an update behind it), asks for a window of 16 chunks, then never reads again (its socket takes
    // one message in): what the host queued waits on the host's side. A small message on each older
    // connection after every new one keeps them all alive (libzmq's heartbeat needs traffic, and this
    // socket sends none of its own). Kept, 60 connections would hold 60 windows; the host keeps the
    // newest and closes the rest.
    // A heartbeat of 10 s: the state's transfer to the attacker, which never moves, is given up after
    // twice that (then only a hello, one a second, queues the state again), and the attack takes less.
    CalmRun calm("join_timeout_s = 5\nround_timeout_s = 30\nheartbeat_timeout_s = 10\n", 20);
    Run& run = calm.run;
    auto& host = calm.host;
    auto& honest = calm.honest;
    auto diagnostics = [&] { return calm.diagnostics(); };
    auto rounds = [&] { return calm.rounds(); };
    const double calm_pace = calm.pace;
    const uint64_t peak_before = calm.peak;

    const std::string endpoint = net::Invite::load(run.invite(3)).host_endpoint;
    const int host_port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
    const int open_before = established_at(host_port);  // the honest peers'
    constexpr int kConnections = 60;
    std::vector<std::unique_ptr<net::PeerSocket>> sockets;
    uint64_t blob_bytes = 0;  // the largest blob begun (the state)
    int windows = 0;  // connections that got a begin and asked for its chunks
    const int attack_from = rounds();
    const double attack_cpu_from = cpu_seconds_of(host->pid());
    const auto attack = Clock::real().now();
    for (int c = 0; c < kConnections && host->running(); ++c) {
        for (auto& older : sockets)  // keep-alives: statuses of no transfer, refused (and charged) by the host
            (void)send_raw(*older, net::kTransferStatus, net::encode(net::StatusMsg{0xdead, 1, 1, {}}));
        sockets.push_back(raw_socket(run, 3, [](net::Limits& l) {
            l.queue_messages = 1;                                  // takes one message in, then stops reading
            l.reconnect_ivl_ms = l.reconnect_ivl_max_ms = 600000;  // a closed one stays closed
            // No ZMTP heartbeat of its own, and a closed socket is never read again: libzmq 4.3 aborts
            // (!_io_error, zeromq/libzmq#4364) when either meets a connection that closed while its input
            // was stopped, as each of these is.
            l.heartbeat_ivl_ms = 0;
            l.send_timeout_ms = 0;  // a keep-alive for a closed one is not waited for
        }));
        net::PeerSocket& socket = *sockets.back();
        // Its queue holds one message, and libzmq notices the last one left only when it next looks
        // (at most each millisecond): a send is tried again for up to half a second.
        auto send_soon = [&](uint16_t type, std::span<const std::byte> payload) {
            for (int i = 0; i < 100; ++i) {
                if (send_raw(socket, type, payload)) return true;
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            return false;
        };
        const auto connecting = Clock::real().now();
        while (!socket.connected() && seconds_since(connecting) < 30) (void)socket.poll(20);
        protocol::Hello hello;
        hello.name = "many";
        std::optional<net::BeginMsg> begin;
        const auto asked = Clock::real().now();
        // A begin comes at once while the host still queues something for this key; once it has given
        // up (too far behind), only a hello queues the state again, and hellos are budgeted at one a
        // second: say it again each 1.1 s.
        auto last_hello = asked - std::chrono::seconds(2);
        while (!begin && seconds_since(asked) < 6) {
            if (seconds_since(last_hello) > 1.1) {
                if (!send_soon(static_cast<uint16_t>(protocol::Type::hello), protocol::encode(hello)))
                    FAIL("connection " << c << " cannot send its hello (connected: " << socket.connected()
                                       << ")\n" << diagnostics());
                last_hello = Clock::real().now();
            }
            const std::optional<net::Incoming> in = socket.poll(100);
            std::string error;
            if (in && in->header.type == net::kTransferBegin) begin = net::decode_begin(in->payload, error);
        }
        if (!begin) continue;
        ++windows;
        blob_bytes = std::max(blob_bytes, begin->total_bytes);
        const std::vector<bool> none(begin->chunk_count, false);
        REQUIRE(send_soon(net::kTransferStatus, net::encode(net::StatusMsg{begin->id, 1, 16, none})));
    }
    // What is on its way, then the figures.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double attack_s = seconds_since(attack);
    const double attack_pace = (rounds() - attack_from) / attack_s;
    const double attack_cpu = cpu_seconds_of(host->pid()) - attack_cpu_from;
    const uint64_t peak_after = memory_of(host->pid(), "VmHWM");
    // The kernel's count of the host's connections still open, less the honest peers'.
    const int open = established_at(host_port) - open_before;
    WARN("attack (" << kConnections << " connections, " << attack_s << " s): " << attack_pace << " rounds/s, host "
                    << attack_cpu << " CPU s, peak RSS " << peak_after / 1e6 << " MB; " << windows
                    << " windows asked for; " << open << " of its connections still open");
    if (!host->running()) FAIL(diagnostics());
    INFO(diagnostics());
    REQUIRE(windows >= kConnections - 5);  // else the attack measures little
    CHECK(host->log().find("closed the older one") != std::string::npos);
    CHECK(open == 1);  // the newest
    if (std::getenv("ARCH_SANITIZED") == nullptr) {
        // One connection's window and the state it pins, and the swings of the host's peak (as in the
        // flood test above); 60 windows of up to 16 MiB would be hundreds of MB more.
        constexpr uint64_t kConnectionAllowance = 28ull << 20;
        CHECK(peak_after < peak_before + 6 * blob_bytes + 2 * kConnectionAllowance);
        CHECK(attack_pace > calm_pace / 3);
    }
    CHECK(attack_pace > 0);
    sockets.clear();
    stop_cleanly(*host, honest);
    const std::string model = run.dir.file("host") + "/model.bin";
    const std::vector<float> theta = read_checkpoint_params(model, read_checkpoint_config(model));
    CHECK(std::all_of(theta.begin(), theta.end(), [](float v) { return std::isfinite(v); }));
}
