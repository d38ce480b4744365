// tests/peers/test_overlap_run.cpp: overlapped rounds (run.mode = "overlap") as real processes: a host
// and three peers over CURVE on loopback, one of them an island of two ZeRO-3 devices, with fp4 and
// error feedback up. Every island ends every round bit-identical to the host (θ hash); islands train
// the next round while the sync travels, and send after the steps left; the run learns. A peer
// SIGKILLed in the middle of sending its Δ does not stop the run, and restarted it resyncs and ends
// every later round in sync. A host SIGKILLed and restarted from its checkpoint: the islands, which were
// training on ahead of it, resync and finish the run with its θ. With H from the link, every round's H
// is within its bounds and says why.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "core/file_io.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

namespace {

constexpr int kH = 6;

// The fixture's run.toml in overlap mode, H = kH (or these [inner] lines instead), with this uplink codec.
void make_overlap(const Run& run, const std::string& codec, const std::string& steps = "steps_per_round = " + std::to_string(kH)) {
    std::string toml = read_file_bytes(run.config);
    auto set = [&](const std::string& from, const std::string& to) {
        const std::size_t at = toml.find(from);
        REQUIRE(at != std::string::npos);
        toml.replace(at, from.size(), to);
    };
    set("name = \"test\"", "name = \"test\"\nmode = \"overlap\"");
    set("steps_per_round = 3", steps);
    set("codec = \"fp32\"", "codec = \"" + codec + "\"");
    write_file(run.config, toml);
}

std::string logs(const Process& host, const std::vector<std::unique_ptr<Process>>& peers) {
    std::string all = "--- host\n" + host.log();
    for (const auto& p : peers) all += "\n--- peer\n" + p->log();
    return all;
}

}  // namespace

TEST_CASE("overlap: every island matches the host every round, a ZeRO-3 island too, and trains while the sync travels") {
    constexpr int kRounds = 4;
    Run run(kRounds, 3);
    make_overlap(run, "fp4+ef+zstd");
    for (int i = 1; i <= 3; ++i) run.make_peer(i);
    auto host = run.host();
    std::vector<std::unique_ptr<Process>> peers;
    peers.push_back(run.peer(1));
    peers.push_back(run.peer(2));
    peers.push_back(run.peer(3, kEnv, {"--devices", "2", "--parallel", "zero3"}));
    const bool ok = host->wait(300) == 0;
    for (auto& p : peers) CHECK(p->wait(30) == 0);
    INFO(logs(*host, peers));
    REQUIRE(ok);
    CHECK(host->count({.kind = "finished", .round = kRounds}) == 1);
    std::map<int64_t, RunEvent> host_rounds;
    for (const RunEvent& e : host->events())
        if (e.kind == "round_finished") host_rounds[e.round] = e;
    REQUIRE(host_rounds.size() == kRounds);

    int overlapped = 0, sent_early = 0;
    for (auto& p : peers) {
        const std::vector<RunEvent> events = p->events();
        for (int r = 0; r < kRounds; ++r) {
            INFO("round " << r);
            const RunEvent applied = first_event(events, {.kind = "round_applied", .round = r, .islands = 3});
            CHECK(applied.theta == host_rounds.at(r).theta);  // the replica's θ hash after update r is the host's
        }
        CHECK(count_events(events, {.kind = "theta_differs"}) == 0);
        for (const RunEvent& e : events) {
            if (e.kind == "merged") overlapped += e.steps;
            if (e.kind == "sent" && e.round > 0 && e.steps < kH) ++sent_early;
        }
    }
    // The faster islands train on while the slowest one's Δ is awaited: some of a round's steps come
    // before its round_start, and that round is sent after the steps left.
    CHECK(overlapped > 0);
    CHECK(sent_early > 0);
    const std::vector<double> val = measured_val_losses(*host);
    REQUIRE(val.size() >= 2);  // the starting θ's and the last
    CHECK(host_rounds.at(kRounds - 1).val_loss == val.back());
    CHECK(val.back() < val.front());
}

TEST_CASE("overlap: a peer SIGKILLed mid-send does not stop the run; restarted, it resyncs and stays in sync") {
    constexpr int kRounds = 12;
    Run run(kRounds, 2);
    make_overlap(run, "fp32");  // an fp32 Δ spans several transfer chunks: the kill comes in the middle of one
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2, kEnv, {"--fault-kill-after-chunks", "1"});
    if (p2->wait(180) != -SIGKILL) FAIL(host->log() + "\n--- peer 2\n" + p2->log());
    if (!host->wait_event({.kind = "round_started", .round = 1}, 120)) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    auto p2_again = run.peer(2);
    CHECK(p2_again->wait_event({.kind = "synced"}, 120));
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 2\n" + p2_again->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2_again->wait(30) == 0);
    INFO(host->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2, restarted\n" + p2_again->log());
    CHECK(p2_again->count({.kind = "round_applied", .round = kRounds - 1}) == 1);
    CHECK(p1->count({.kind = "round_applied", .round = kRounds - 1}) == 1);
    CHECK(p1->count({.kind = "theta_differs"}) + p2_again->count({.kind = "theta_differs"}) == 0);
}

TEST_CASE("overlap with H from the link: each round's H within its bounds, chosen from what the host measured") {
    constexpr int kRounds = 5;
    Run run(kRounds, 2);
    make_overlap(run, "int8:block=256+zstd:1", "steps_per_round = \"auto\"\nauto_min_steps = 2\nauto_max_steps = 12");
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    const bool ok = host->wait(300) == 0;
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    INFO(host->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2\n" + p2->log());
    REQUIRE(ok);
    std::vector<RunEvent> started;
    for (const RunEvent& e : host->events())
        if (e.kind == "round_started") started.push_back(e);
    REQUIRE(started.size() >= kRounds);
    CHECK(started[0].steps == 2);  // nothing measured yet: the least H, so a sync is measured soon
    CHECK(started[0].detail == "auto: a step not measured yet, so the least H");
    int from_a_sync = 0;
    for (const RunEvent& e : started) {
        CHECK(e.steps >= 2);
        CHECK(e.steps <= 12);
        from_a_sync += e.detail.rfind("auto: a sync ", 0) == 0;
    }
    CHECK(from_a_sync > 0);  // once a sync was measured, H came from it
    for (const auto* p : {p1.get(), p2.get()}) {
        CHECK(p->count({.kind = "round_applied", .round = kRounds - 1}) == 1);
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
}

TEST_CASE("overlap: a host killed and restarted from its checkpoint; the islands training ahead resync and finish") {
    constexpr int kRounds = 20;
    Run run(kRounds, 2);
    make_overlap(run, "fp4+ef+zstd");
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    auto host2 = run.restart_host_after_checkpoint(*host, *p1);
    if (host2->wait(300) != 0) FAIL(host2->log() + "\n--- peer 1\n" + p1->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    INFO(host->log() + "\n--- second host\n" + host2->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2\n" + p2->log());
    const RunEvent resumed = first_event(host2->events(), {.kind = "resumed"});
    CHECK(resumed.round >= 2);
    CHECK(resumed.round < kRounds);
    CHECK(host2->count({.kind = "finished", .round = kRounds}) == 1);
    for (const auto* p : {p1.get(), p2.get()}) {
        CHECK(p->count({.kind = "round_applied", .round = kRounds - 1, .islands = 2}) == 1);
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
}
