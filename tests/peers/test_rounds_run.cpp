// tests/peers/test_rounds_run.cpp: a real Host and real Peers in one process (tests/peers/local_cluster.h),
// so the test sees every message and each island's error-feedback residual. Sync: a straggler's Δ
// that the host drops is not named by the update, and the island encodes its next Δ on the residual
// that one left;
// async with islands at different speeds: stale Δs refused (the island restarted from the current θ)
// or downweighted, Dynamic Local Updates give the slow island fewer steps, and every island ends each
// update with the host's θ.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "tests/peers/local_cluster.h"

using namespace arch;
using namespace arch::test;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool named(const protocol::UpdateMeta& u, uint32_t island, uint64_t round) {
    return std::find(u.applied.begin(), u.applied.end(), protocol::Applied{island, round}) != u.applied.end();
}

}  // namespace

TEST_CASE("sync: a straggler's dropped Δ is not named by the update, and its island encodes the next on what that Δ left") {
    Cluster c(3, 5, "mode = \"sync\"", "int8:block=64+ef", 2.0);
    ManualClock clock;  // the host's: its round deadline passes when this test says so
    c.set_host_clock(clock);
    c.add_peer("peer-1");
    c.add_peer("peer-2");
    // peer-3 is slow in round 1 only: its Δ arrives after the round closed at its deadline and is
    // dropped (deadlines.straggler = "drop"); its residual then holds what that Δ's rounding left.
    // It holds its Δ until the host has the other two of round 1 (3 of round 0 before them), moves
    // the host's clock past round_timeout_s (2 s), and lets go once round 1's update is out.
    std::atomic<bool> slowed{false};
    c.add_peer("peer-3", 1.0, [&](ResidualEvent what, uint64_t round) {
        if (what != ResidualEvent::encoding || round != 1 || slowed.exchange(true)) return;
        if (!c.net().wait_taken_by_host(protocol::Type::pseudo_grad, 5, 60)) return;
        clock.advance(3.0);
        c.net().wait_sent_by_host(protocol::Type::update, 5, 60);  // round 0's 3, then round 1's
    });
    if (!c.run(120)) FAIL(c.all_logs());
    INFO(c.all_logs());
    CHECK(c.count("host", {.kind = "finished", .round = 5}) == 1);
    CHECK(c.count("host", {.kind = "deadline_passed", .round = 1}) == 1);
    CHECK(c.count("host", {.kind = "rejected", .peer = "peer-3", .type = "pseudo_grad"}) >= 1);

    const uint32_t slow = c.island_of("peer-3");
    const std::vector<protocol::UpdateMeta> updates = c.updates();
    REQUIRE(updates.size() == 5);
    CHECK(updates[0].applied.size() == 3);
    CHECK(named(updates[0], slow, 0));
    CHECK(updates[1].applied.size() == 2);
    CHECK_FALSE(named(updates[1], slow, 1));  // the update names what it used, and not the straggler
    for (const protocol::UpdateMeta& u : updates) CHECK(u.islands == u.applied.size());

    // peer-3: the residual it encoded round 1's Δ on; the one that Δ left, when a later round_start
    // settled it as dropped; and the very residual its next Δ was encoded on.
    const std::vector<ResidualSeen> seen = c.residuals("peer-3");
    const auto encoded = std::find_if(seen.begin(), seen.end(),
                                      [](const ResidualSeen& s) { return s.what == ResidualEvent::encoding && s.round == 1; });
    const auto dropped = std::find_if(seen.begin(), seen.end(),
                                      [](const ResidualSeen& s) { return s.what == ResidualEvent::dropped && s.round == 1; });
    REQUIRE(encoded != seen.end());
    REQUIRE(dropped != seen.end());
    CHECK_FALSE(encoded->residual.empty());  // round 0's Δ was applied: there is error to carry
    CHECK_FALSE(same_bits(dropped->residual, encoded->residual));  // round 1's Δ left its own
    const auto next = std::find_if(dropped, seen.end(), [](const ResidualSeen& s) { return s.what == ResidualEvent::encoding; });
    REQUIRE(next != seen.end());
    CHECK(next->round > 1);
    CHECK(same_bits(next->residual, dropped->residual));
    CHECK(c.count("peer-3", {.kind = "not_applied", .round = 1}) == 1);
    // The others' Δs were all applied: none of theirs was dropped.
    for (const char* other : {"peer-1", "peer-2"})
        for (const ResidualSeen& s : c.residuals(other)) CHECK(s.what != ResidualEvent::dropped);
    check_in_sync(c, 3);
}

namespace {

// The slow island holds its first round until the host has sent `updates` updates (to each island:
// 2 islands, so 2 x updates update messages), so its Δ is that stale when it lands, whatever the
// machine's speed; the host's clock then measures it slow, and Dynamic Local Updates shorten it.
std::function<void(ResidualEvent, uint64_t)> hold_first_round(Cluster& c, std::size_t updates) {
    auto held = std::make_shared<std::atomic<bool>>(false);
    return [&c, updates, held](ResidualEvent what, uint64_t round) {
        if (what != ResidualEvent::encoding || round != 0 || held->exchange(true)) return;
        c.net().wait_sent_by_host(protocol::Type::update, 2 * updates, 60);
    };
}

}  // namespace

TEST_CASE("async, stale = refuse: a Δ past max_staleness is refused by name and its island starts again from θ") {
    Cluster c(2, 12, "mode = \"async\"\n[async]\nmax_staleness = 1\nstale = \"refuse\"", "int8:block=64+ef", 30);
    c.add_peer("fast");
    c.add_peer("slow", 1.0, hold_first_round(c, 3));
    if (!c.run(120)) FAIL(c.all_logs());
    INFO(c.all_logs());
    CHECK(c.count("host", {.kind = "finished", .round = 12}) == 1);
    const uint32_t slow = c.island_of("slow");
    const RunEvent refused = first_event(c.events("host"), {.kind = "stale", .type = "refused"});
    CHECK(refused.island == static_cast<int>(slow));
    CHECK(refused.peer == "slow");
    CHECK(refused.round == 0);  // the Δ's round
    CHECK(refused.stale >= 3);
    CHECK_THAT(c.log("host"), Catch::Contains("(async.max_staleness = 1)"));  // the user is told which setting
    // Started again from the round it was refused in, with the θ of that round.
    const uint64_t from = static_cast<uint64_t>(refused.round + refused.stale);
    CHECK(from >= 3);
    bool restarted = false;
    for (const protocol::RoundStart& m : c.round_starts("slow")) restarted = restarted || m.round == from;
    CHECK(restarted);
    // The refused Δ was never applied: the island says so, and keeps what its rounding left.
    CHECK(c.count("slow", {.kind = "not_applied", .round = 0}) == 1);
    const std::vector<ResidualSeen> seen = c.residuals("slow");
    REQUIRE(seen.size() >= 2);
    CHECK(seen[1].what == ResidualEvent::dropped);
    CHECK_FALSE(seen[1].residual.empty());
    for (const protocol::UpdateMeta& u : c.updates()) {
        CHECK(u.applied.size() == 1);  // one Δ per update
        CHECK_FALSE(named(u, slow, 0));
    }
    // Dynamic Local Updates: measured slow by the host's clock, it is asked for fewer steps.
    const std::vector<protocol::RoundStart> starts = c.round_starts("slow");
    REQUIRE(starts.size() >= 2);
    CHECK(starts[0].steps == 8);
    CHECK(starts[1].steps < 8);
    CHECK(starts[1].steps >= 1);
    CHECK(c.count("slow", {.kind = "theta_differs"}) + c.count("fast", {.kind = "theta_differs"}) == 0);
    check_in_sync(c, 2);
}

TEST_CASE("async, stale = downweight: a Δ past max_staleness is scaled by (1+max)/(1+s) and applied") {
    Cluster c(2, 12, "mode = \"async\"\n[async]\nmax_staleness = 1\nstale = \"downweight\"", "int8:block=64+ef", 30);
    c.add_peer("fast");
    c.add_peer("slow", 1.0, hold_first_round(c, 3));
    if (!c.run(120)) FAIL(c.all_logs());
    INFO(c.all_logs());
    CHECK(c.count("host", {.kind = "finished", .round = 12}) == 1);
    CHECK(c.count("host", {.kind = "stale", .type = "refused"}) == 0);
    const uint32_t slow = c.island_of("slow");
    const RunEvent down = first_event(c.events("host"), {.kind = "stale", .round = 0, .island = static_cast<int>(slow),
                                                         .peer = "slow", .type = "downweighted"});
    REQUIRE(down.kind == "stale");
    CHECK(down.stale >= 3);
    CHECK(down.scale == Approx(2.0 / (1.0 + static_cast<double>(down.stale))).epsilon(1e-6));  // (1 + max) / (1 + s)
    // Nothing was dropped; each update named its one Δ, in order.
    for (const char* name : {"fast", "slow"})
        for (const ResidualSeen& s : c.residuals(name)) CHECK(s.what != ResidualEvent::dropped);
    const std::vector<protocol::UpdateMeta> updates = c.updates();
    REQUIRE(updates.size() == 12);
    bool slow_applied = false;
    for (std::size_t i = 0; i < updates.size(); ++i) {
        CHECK(updates[i].round == i);
        CHECK(updates[i].applied.size() == 1);
        slow_applied = slow_applied || named(updates[i], slow, 0);
    }
    CHECK(slow_applied);
    check_in_sync(c, 2);
}
