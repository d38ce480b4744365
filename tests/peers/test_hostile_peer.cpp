// tests/peers/test_hostile_peer.cpp: an invited (authenticated) peer that attacks the host with real
// sockets, next to honest `archipelago peer` processes: transfer-begins declaring 4 GiB (pseudo-
// gradients and DES-LOC moments), 50,000 hellos without reading and an abrupt disconnect (libzmq
// #4364 killed the host this way), a flood of hellos and hash reports that never match. The host's
// memory stays bounded (its peak RSS, read from /proc), it stays alive, the honest rounds keep their
// pace, and SIGTERM then stops host and peers with exit 0 and a checkpoint that loads. Also: a
// checkpoint folder that turns read-only, an async pseudo-gradient re-sent after a reconnect under its
// old transfer id, applied once, and a peer name and bye reason with newlines and terminal escapes,
// which the host's log shows escaped on one line.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "core/checkpoint.h"
#include "core/clock.h"
#include "net/transfer_blocking.h"
#include "net/transfer_wire.h"
#include "tests/peers/insider.h"

using namespace arch;
using namespace arch::test;

namespace {

int rounds_started(const Process& host) { return host.count({.kind = "round_started"}); }

double seconds_since(Clock::time_point t) { return Clock::real().seconds_since(t); }

}  // namespace

TEST_CASE("an invited peer that floods the host cannot exhaust, stall or kill it; SIGTERM then stops the run cleanly") {
    // channels 384: θ is about 20 MB, so a copy of it (or of the state) would show in the host's RSS.
    Run run(400, 3, 384, "join_timeout_s = 5\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
    for (int i = 1; i <= 3; ++i) run.make_peer(i);  // peer 3 is this test
    auto host = run.host();
    HandPeer attacker(run, 3);
    const std::size_t params = attacker.join("attacker");  // admitted as an island; never reports in sync
    const uint64_t model_bytes = 4 * params;
    std::vector<std::unique_ptr<Process>> honest;
    for (int i = 1; i <= 2; ++i) honest.push_back(run.peer(i));
    auto diagnostics = [&] { return host->log() + "\n--- peer 1\n" + honest[0]->log(); };
    INFO("model: " << params << " parameters");

    // The honest pace, and the host's peak memory, before the attack: rounds 5 to 40, timed by their
    // starts (waited for, with deadlines; no fixed sleep), about as long as the attack: the host's
    // peak creeps up by steps over its first tens of rounds (its RSS swings from round to round), and
    // a short calm part would leave that creep to the attack's account. At round 41's start the peak
    // holds round 39's update, one that carries DES-LOC's moments (outer.sync_moments_every = 4 by
    // default); the attack's first part ends long before round 43's.
    auto wait_rounds = [&](int n, int timeout_s) {
        const auto deadline = Clock::real().now() + std::chrono::seconds(timeout_s);
        while (rounds_started(*host) < n && Clock::real().now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (!(rounds_started(*host) >= n)) FAIL(diagnostics());
    };
    wait_rounds(5, 180);
    const int before = rounds_started(*host);
    const auto calm = Clock::real().now();
    wait_rounds(41, 180);
    const double calm_pace = (rounds_started(*host) - before) / seconds_since(calm);
    const uint64_t peak_before = memory_of(host->pid(), "VmHWM");
    INFO("honest pace before the attack: " << calm_pace << " rounds/s; host peak RSS " << peak_before / 1e6 << " MB");
    REQUIRE(calm_pace > 0);

    const int attack_start = rounds_started(*host);
    const auto attack = Clock::real().now();
    // 1. 100 transfer-begins declaring 4 GiB each, with new ids: pseudo-gradients and DES-LOC's moments.
    for (uint64_t id = 1; id <= 100; ++id) {
        net::BeginMsg begin;
        begin.id = 0x4000 + id;
        begin.total_bytes = 4ull << 30;
        begin.chunk_bytes = 1u << 20;
        begin.chunk_count = 4096;
        begin.tag = static_cast<uint32_t>(id % 2 ? protocol::Type::pseudo_grad : protocol::Type::moments);
        send_raw(*attacker.socket, net::kTransferBegin, net::encode(begin));
    }
    // Every one of them refused at its begin: the last has reached the host.
    if (!host->wait_event({.kind = "transfer_refused"}, 30, 100)) FAIL(diagnostics());
    CHECK(host->count({.kind = "transfer_refused", .detail = "at most"}) == 100);  // over the bound its type has
    const uint64_t peak_begins = memory_of(host->pid(), "VmHWM");
    INFO("after 100 transfer-begins of 4 GiB: host peak RSS " << peak_begins / 1e6 << " MB");
    // Under AddressSanitizer (make test-asan) freed memory sits in quarantine and everything runs
    // several times slower: there the attack must leave the host alive and serving, nothing more.
    const bool sanitized = std::getenv("ARCH_SANITIZED") != nullptr;
    // VmHWM is not a strict high-water mark (memory given back with madvise leaves it lower): compared, never subtracted.
    if (!sanitized) CHECK(peak_begins < peak_before + model_bytes);
    // 2. 50,000 hellos without reading a reply, then an abrupt disconnect; five times.
    protocol::Hello hello;
    hello.name = "attacker";
    const std::vector<std::byte> hello_bytes = protocol::encode(hello);
    attacker.leave();
    for (int burst = 0; burst < 5; ++burst) {
        auto socket = raw_socket(run, 3);
        for (int i = 0; i < 50000; ++i)
            if (!send_raw(*socket, static_cast<uint16_t>(protocol::Type::hello), hello_bytes)) break;  // not a hang if the host died
        socket.reset();
        if (!(host->running())) FAIL(diagnostics());
    }
    // 3. 1,000 hellos a second for 20 s, each followed by a hash report that never matches.
    {
        auto socket = raw_socket(run, 3);
        const std::vector<std::byte> report = protocol::encode(protocol::HashReport{0, std::string(64, 'f')});
        const auto flood = Clock::real().now();
        for (int i = 0; seconds_since(flood) < 20 && i < 20000 && host->running(); ++i) {
            if (!send_raw(*socket, static_cast<uint16_t>(protocol::Type::hello), hello_bytes) ||
                !send_raw(*socket, static_cast<uint16_t>(protocol::Type::hash_report), report))
                break;
            std::this_thread::sleep_until(flood + std::chrono::microseconds(1000 * (i + 1)));
        }
    }
    const double attack_s = seconds_since(attack);
    const double attack_pace = (rounds_started(*host) - attack_start) / attack_s;
    const uint64_t peak_after = memory_of(host->pid(), "VmHWM");
    INFO("during the attack (" << attack_s << " s): " << attack_pace << " rounds/s; host peak RSS " << peak_after / 1e6
                               << " MB, model " << model_bytes / 1e6 << " MB");
    if (!(host->running())) FAIL(diagnostics());
    if (!sanitized) {
        // The hellos make the host build the state of the current θ once (the old copy is freed first;
        // the checkpoint writer holds none: it reads θ, copied on write, which a write slower than a
        // round may leave to it). One state is θ alone (protocol 9), a model size and its headers. Beside it the attacker's connection may fill its own allowance (docs/run-config.md:
        // 16 MiB read but not handled, 12 MiB of data replies). A second copy of the state for the
        // attacker would add a model size more. (Whether the calm phase had a state and a checkpoint
        // at once, and so raised the peak before, depends on the run: the bound holds either way.)
        constexpr uint64_t kConnectionAllowance = 28ull << 20;
        CHECK(peak_after < peak_before + 3 * model_bytes / 2 + kConnectionAllowance);
        CHECK(attack_pace > calm_pace / 3);  // two cores: the attacker's CURVE traffic costs the honest islands some CPU
    }
    CHECK(attack_pace > 0);
    CHECK(host->count({.kind = "transfer_refused"}) == 100);
    CHECK(host->count({.kind = "over_budget", .peer = "attacker"}) >= 1);

    // SIGTERM: the host and the peers stop cleanly, and the checkpoint loads.
    stop_cleanly(*host, honest);
    const std::string hl = host->log();
    INFO(hl.substr(hl.size() > 6000 ? hl.size() - 6000 : 0));
    CHECK(hl.find("Interrupted system call") == std::string::npos);
    CHECK(honest[0]->log().find("Interrupted system call") == std::string::npos);
    CHECK(honest[0]->count({.kind = "round_applied"}) >= rounds_started(*host) - 2);  // in sync all along
    CHECK(honest[0]->count({.kind = "theta_differs"}) == 0);
    const std::string model = run.dir.file("host") + "/model.bin";
    const std::vector<float> theta = read_checkpoint_params(model, read_checkpoint_config(model));
    CHECK(theta.size() == params);
    CHECK(std::all_of(theta.begin(), theta.end(), [](float v) { return std::isfinite(v); }));
}

TEST_CASE("a checkpoint folder that turns read-only in the middle of a run: the host logs it and keeps serving") {
    Run run(6, 1);
    run.make_peer(1);
    const std::string folder = run.dir.file("host");
    auto host = run.host();
    auto peer = run.peer(1);
    if (!host->wait_event({.kind = "round_started", .round = 2}, 120)) FAIL(host->log());
    // A read-only bind mount of the folder over itself (root ignores file modes, not a ro mount).
    if (::mount(folder.c_str(), folder.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, folder.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
        ::umount(folder.c_str());
        host->kill(SIGKILL);
        peer->kill(SIGKILL);
        WARN("skipped: cannot bind-mount read-only here (needs root with CAP_SYS_ADMIN): " << std::strerror(errno));
        return;
    }
    const bool logged = host->wait_event({.kind = "checkpoint_failed"}, 120);
    ::umount(folder.c_str());
    if (!(logged)) FAIL(host->log());
    if (host->wait(300) != 0) FAIL(host->log());
    CHECK(peer->wait(60) == 0);
    CHECK(peer->count({.kind = "round_applied"}) == 6);  // every round, the read-only ones too
    CHECK(peer->count({.kind = "theta_differs"}) == 0);
    const std::string model = folder + "/model.bin";
    CHECK(read_checkpoint_params(model, read_checkpoint_config(model)).size() > 0);  // written again once writable
}

namespace {

// Async, one island driven by hand, two rounds of the same Δ, with a reconnect between them. With
// `replay`, the first round's pseudo-gradient is sent again over the new connection, under the same
// transfer id. Returns θ's hash after the last update, and the host's events.
std::pair<std::string, std::vector<RunEvent>> async_run_with_reconnect(bool replay) {
    Run run(2, 1);
    run.make_async();
    run.make_peer(1);
    auto host = run.host();
    auto first = std::make_unique<HandPeer>(run, 1);
    const std::vector<float> delta(first->join("replayer"), 1e-3f);
    const protocol::RoundStart rs = first->wait_round_start();
    ByteWriter w;
    w.bytes(protocol::encode(protocol::PseudoGradMeta{rs.round, 32.0, 4.0f, 3, 1.0f}));
    w.bytes(compression::make_codec("fp32")->encode(delta));
    const std::vector<std::byte> bytes = w.take();
    const uint32_t tag = static_cast<uint32_t>(protocol::Type::pseudo_grad);
    std::string error;
    net::TransferSender sender(0x5eed, bytes, NetLink::kChunkBytes, tag);
    REQUIRE(net::send_blob(sender, net::link_to_host(*first->socket, static_cast<uint32_t>(rs.round)), 60000, error));
    REQUIRE(first->wait_event(protocol::Type::update, 60));
    first->leave();
    auto second = std::make_unique<HandPeer>(run, 1);  // the same key, a new connection
    if (replay) {
        net::TransferSender again(0x5eed, bytes, NetLink::kChunkBytes, tag);
        REQUIRE(net::send_blob(again, net::link_to_host(*second->socket, static_cast<uint32_t>(rs.round)), 60000, error));
        CHECK(again.chunks_sent() == 0);  // answered "done" at once: the host holds nothing new
    }
    second->join("replayer");
    const protocol::RoundStart next = second->wait_round_start();
    second->send_grad(next.round, delta, 32.0);
    const std::optional<LinkEvent> update = second->wait_event(protocol::Type::update, 60);
    REQUIRE(update);
    ByteReader reader(update->payload, "update");
    const protocol::UpdateMeta meta = protocol::decode_update(reader.bytes(4096));
    second->report(meta.round + 1, meta.theta_hash);
    if (host->wait(120) != 0) FAIL(host->log());
    return {meta.theta_hash, host->events()};
}

}  // namespace

TEST_CASE("async: a pseudo-gradient sent again after a reconnect, under the same transfer id, is applied once") {
    const auto [plain_hash, plain_events] = async_run_with_reconnect(false);
    const auto [replay_hash, replay_events] = async_run_with_reconnect(true);
    CHECK(replay_hash == plain_hash);  // θ as if the replay never happened
    CHECK(count_events(replay_events, {.kind = "rejected", .type = "pseudo_grad"}) == 0);  // the link knew it: nothing reached the host
    CHECK(count_events(replay_events, {.kind = "round_finished"}) == 2);
}

TEST_CASE("a peer's name and bye reason reach the host's log and terminal as one printable line") {
    Run run(2, 1);
    run.make_peer(1);
    auto host = run.host();
    const std::string forged = "2026-12-05 00:00:00.000 info  [host] run finished after 2 rounds";
    HandPeer evil(run, 1);
    const std::string name = "evil\n" + forged + "\x1b[2J\x1b[31m\xc2\x9b" "1m";
    evil.join(name);
    REQUIRE(host->wait_event({.kind = "admitted", .peer = name}, 60));  // the events file keeps it as sent (JSON)
    evil.link->send(evil.host_key, protocol::Type::bye, 0,
                    protocol::encode({protocol::ReasonCode::left, "bye\r\n" + forged + "\x07\x1b]0;title\x07"}));
    REQUIRE(host->wait_event({.kind = "peer_left", .peer = name}, 30));
    host->kill(SIGTERM);
    host->wait(60);
    const std::string log = host->log();
    INFO(log);
    CHECK(log.find('\x1b') == std::string::npos);
    CHECK(log.find('\x07') == std::string::npos);
    CHECK(log.find('\r') == std::string::npos);
    CHECK(log.find("\xc2\x9b") == std::string::npos);
    CHECK(log.find("\n" + forged) == std::string::npos);  // no line of its own
    CHECK(log.find("evil\\n" + forged + "\\x1b[2J\\x1b[31m\\u009b1m") != std::string::npos);  // shown, escaped
    CHECK(log.find("bye\\r\\n" + forged + "\\x07\\x1b]0;title\\x07") != std::string::npos);
}
