// tests/peers/test_rounds.cpp: the round policies and their pure rules, without a host or a network.
// Dynamic Local Updates round down (the paper's floor) and never below one step; a round's steps
// are placed in the run's lr schedule so a slow island still ends its cosine with the run; the
// staleness rule downweights or refuses past async.max_staleness; the sync policy waits, folds and
// holds; the async policy makes one update per Δ, refuses or scales stale ones, and restarts islands;
// H from the link is the fewest steps that keep an island busy its target share, within its bounds.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "peers/rounds/async_policy.h"
#include "peers/rounds/auto_steps.h"
#include "peers/rounds/local_steps.h"
#include "peers/rounds/overlap_policy.h"
#include "peers/rounds/staleness.h"
#include "peers/rounds/streaming_policy.h"
#include "peers/rounds/sync_policy.h"

using namespace arch;
using namespace arch::rounds;

namespace {

IslandView island(const std::string& key, uint32_t index, float steps_per_s = 0) {
    IslandView i;
    i.key = key;
    i.index = index;
    i.name = key;
    i.connected = i.ready = true;
    i.steps_per_s = steps_per_s;
    i.step_s = steps_per_s > 0 ? 1.0 / steps_per_s : 0.0;
    return i;
}

RunSnapshot run_view(uint64_t round, uint64_t rounds, const std::vector<IslandView>& islands, double seconds_open = 0) {
    RunSnapshot v;
    v.round = round;
    v.rounds = rounds;
    v.seconds_open = seconds_open;
    v.islands = islands;
    return v;
}

Contribution delta(const IslandView& i, uint64_t round, float value = 1.0f) {
    return Contribution{i.index, i.key, i.name, round, std::vector<float>(4, value), 32.0, 4.0f, nullptr, 0, 1.0f};
}

}  // namespace

TEST_CASE("Dynamic Local Updates: H_i = floor(H * v_i / v_max), at least 1, H while a speed is unknown") {
    CHECK(local_steps(50, 1.0, 1.0) == 50);
    CHECK(local_steps(50, 0.25, 1.0) == 12);  // 12.5 rounds down
    CHECK(local_steps(50, 0.5, 1.0) == 25);
    CHECK(local_steps(50, 0.999, 1.0) == 49);
    CHECK(local_steps(50, 0.001, 1.0) == 1);  // never no step at all
    CHECK(local_steps(50, 0.0, 1.0) == 50);   // not measured yet
    CHECK(local_steps(50, 1.0, 0.0) == 50);
    CHECK(local_steps(50, 2.0, 1.0) == 50);   // never above H
    CHECK(local_steps(50, std::nan(""), 1.0) == 50);
    CHECK(local_steps(1, 0.1, 1.0) == 1);
}

TEST_CASE("H from the link: the fewest steps that keep an island busy its target share, within bounds") {
    const AutoSteps a{.target = 0.95, .min_steps = 10, .max_steps = 1000};
    // GPT-2 124M on a 4090 (0.1 s a step) and a sync of 28 s: overlapped, 266 steps hide it (0.95 x 280
    // = 266); waiting, 19 x 280 = 5320 would be needed, past the bound.
    CHECK(auto_steps_per_round(a, 0.1, 28.0, true) == 266);
    CHECK(busy_share(266, 0.1, 28.0, true) == Approx(0.95).epsilon(1e-3));
    CHECK(busy_share(265, 0.1, 28.0, true) < 0.95);
    CHECK(auto_steps_per_round(a, 0.1, 28.0, false) == 1000);
    CHECK(auto_steps_per_round(AutoSteps{.target = 0.95, .min_steps = 10, .max_steps = 10000}, 0.1, 28.0, false) == 5320);
    CHECK(busy_share(5320, 0.1, 28.0, false) == Approx(0.95).epsilon(1e-4));
    CHECK(busy_share(5319, 0.1, 28.0, false) < 0.95);
    // An exact ratio costs no step; a fast link meets the lower bound; an unknown step time the upper.
    CHECK(auto_steps_per_round(AutoSteps{.target = 0.5, .min_steps = 1, .max_steps = 100}, 1.0, 18.0, true) == 9);
    CHECK(auto_steps_per_round(a, 0.1, 0.2, true) == 10);
    CHECK(auto_steps_per_round(a, 0.1, 0.0, false) == 10);
    CHECK(auto_steps_per_round(a, 0.0, 28.0, true) == 1000);
    CHECK(auto_steps_per_round(a, std::nan(""), 28.0, true) == 1000);
    CHECK(auto_steps_per_round(a, 0.1, std::numeric_limits<double>::infinity(), true) == 1000);
    // A link that slows down asks for more steps, never fewer.
    uint32_t last = 0;
    for (double sync : {1.0, 5.0, 20.0, 60.0, 200.0}) {
        const uint32_t H = auto_steps_per_round(a, 0.1, sync, true);
        CHECK(H >= last);
        last = H;
    }
}

TEST_CASE("H from the link in the policies: each round's H from the slowest step and the last sync, and why") {
    const AutoSteps a{.target = 0.95, .min_steps = 10, .max_steps = 1000};
    std::vector<IslandView> islands = {island("a", 0, 10.0f), island("b", 1, 5.0f)};  // 0.1 and 0.2 s a step
    OverlapPolicy overlap(1000, 300, false, {});
    overlap.steps_from_link(a);
    RunSnapshot v = run_view(0, 10, islands);
    // No sync measured yet: the least H, so that one is measured soon; the schedule still spans 1000.
    auto o = overlap.open_round(v);
    REQUIRE(o.starts.size() == 2);
    CHECK(o.starts[0].steps == 10);
    CHECK(o.starts[0].schedule.from == 0);
    CHECK(o.starts[0].schedule.to == 1000);
    CHECK(overlap.round_steps().why == "auto: a sync not measured yet, so the least H");
    for (const IslandView& i : islands) overlap.on_arrival(v, delta(i, 0));
    overlap.take_update();
    // A sync of 19 s against the slowest island's 0.2 s a step: 0.95 x 95 steps hide it.
    v = run_view(1, 10, islands);
    v.sync_s = 19.0;
    overlap.after_update(v, true);
    o = overlap.open_round(v);
    CHECK(o.starts[1].steps == 92);  // ceil(0.95 x 19 / 0.2) = ceil(90.25), and the step after the merge
    CHECK(o.starts[1].schedule.from == 1000);
    CHECK(overlap.round_steps().steps == 92);
    CHECK(overlap.round_steps().why == "auto: a sync 19.00 s, a step 0.200 s; 95% busy overlapped");
    // An island not in the round waits for the next one.
    CHECK(overlap.on_ready(v, island("c", 2, 1.0f)) == std::nullopt);  // not in the round: waits for the next
    for (const IslandView& i : islands) overlap.on_arrival(v, delta(i, 1));
    overlap.take_update();
    // The link slows down tenfold: H grows, to its bound; sync mode (waiting) would need 19 times more.
    v = run_view(2, 10, islands);
    v.sync_s = 190.0;
    overlap.after_update(v, true);
    CHECK(overlap.open_round(v).starts[0].steps == 904);
    SyncPolicy waiting(1000, 300, false, {});
    waiting.steps_from_link(a);
    v.sync_s = 19.0;
    CHECK(waiting.open_round(v).starts[0].steps == 1000);
    CHECK(waiting.round_steps().why == "auto: a sync 19.00 s, a step 0.200 s; 95% busy waiting, at the most H");
    // A fixed H says so.
    SyncPolicy fixed(50, 300, false, {});
    CHECK(fixed.open_round(v).starts[0].steps == 50);
    CHECK(fixed.round_steps().why == "inner.steps_per_round");

    // Async: H for the fastest island (0.1 s a step), and Dynamic Local Updates give the slower one half.
    AsyncPolicy async(1000, StalenessRule{4, StaleAction::downweight});
    async.steps_from_link(a);
    v.sync_s = 1.0;  // async islands wait for their update: 19 x 10 steps
    o = async.open_round(v);
    REQUIRE(o.starts.size() == 2);
    CHECK(o.starts[0].steps == 190);
    CHECK(o.starts[1].steps == 95);
}

TEST_CASE("a round's steps are spread over the positions it covers in the run's lr schedule") {
    CHECK(schedule_span(3, 1, 10, 50).from == 150);  // sync: one update a round
    CHECK(schedule_span(3, 1, 10, 50).to == 200);
    CHECK(schedule_span(8, 4, 10, 50).from == 400);  // async with 4 islands: up to the run's end
    CHECK(schedule_span(8, 4, 10, 50).to == 500);
    CHECK(schedule_span(12, 1, 10, 50).from == 500);  // past the end: the last position
    CHECK(schedule_span(12, 1, 10, 50).to == 500);
    const ScheduleSpan s{100, 200};
    CHECK(schedule_position(s, 0, 100) == 100);  // H steps over H positions: one each
    CHECK(schedule_position(s, 99, 100) == 199);
    CHECK(schedule_position(s, 0, 25) == 100);  // H/4 steps: every fourth
    CHECK(schedule_position(s, 1, 25) == 104);
    CHECK(schedule_position(s, 24, 25) == 196);

    LrSchedule lr;
    lr.max_lr = 1e-3f;
    lr.warmup_steps = 20;
    lr.total_steps = 10 * 40;
    // An island that runs every round with the full H gets exactly the schedule at its own step count.
    for (int own : {0, 5, 19, 20, 150, 399})
        CHECK(placed_lr(lr, static_cast<uint64_t>(own), own) == lr.at(own));
    // A slow island with H/4 steps a round ends its cosine with the run; by its own step count it
    // would end a quarter of the way in, still near max_lr.
    const uint32_t H = 40, slow = 10;
    int own = 0;
    float last = 0;
    for (uint64_t round = 0; round < 10; ++round)
        for (uint32_t k = 0; k < slow; ++k) last = placed_lr(lr, schedule_position(schedule_span(round, 1, 10, H), k, slow), own++);
    const float min_lr = lr.max_lr * lr.final_fraction;
    CHECK(last <= min_lr + 0.01f * (lr.max_lr - min_lr));
    CHECK(lr.at(own - 1) > 0.8f * lr.max_lr);
    // One that joins late warms up its fresh AdamW moments over its own first steps.
    CHECK(placed_lr(lr, 200, 0) == Approx(lr.max_lr / 20));
    CHECK(placed_lr(lr, 200, 30) == lr.at(200));
}

TEST_CASE("staleness: in full up to max_staleness, then downweighted by (1+max)/(1+s) or refused") {
    const StalenessRule down{2, StaleAction::downweight};
    for (uint64_t s : {0, 1, 2}) {
        CHECK_FALSE(judge_staleness(s, down).refused);
        CHECK(judge_staleness(s, down).scale == 1.0f);
    }
    CHECK(judge_staleness(3, down).scale == Approx(3.0 / 4.0));
    CHECK(judge_staleness(8, down).scale == Approx(3.0 / 9.0));
    const StalenessRule classic{0, StaleAction::downweight};  // max_staleness 0: 1 / (1 + s)
    CHECK(judge_staleness(1, classic).scale == Approx(0.5));
    CHECK(judge_staleness(3, classic).scale == Approx(0.25));
    const StalenessRule refuse{2, StaleAction::refuse};
    CHECK_FALSE(judge_staleness(2, refuse).refused);
    CHECK(judge_staleness(3, refuse).refused);
    CHECK(parse_stale_action("refuse") == StaleAction::refuse);
    CHECK(parse_stale_action("downweight") == StaleAction::downweight);
}

TEST_CASE("sync: a round waits for every island it started, refuses what does not belong, then makes one update") {
    std::vector<std::string> log;
    std::vector<RunEvent> events;
    SyncPolicy p(8, 30, false, [&](const std::string& l, const RunEvent& e) {
        log.push_back(l);
        events.push_back(e);
    });
    std::vector<IslandView> islands = {island("a", 0), island("b", 1), island("c", 2)};
    islands[2].ready = false;  // not in sync: not in this round
    CHECK_FALSE(p.open());
    const RoundPolicy::Opening o = p.open_round(run_view(2, 10, islands));
    CHECK(p.open());
    REQUIRE(o.starts.size() == 2);
    CHECK(o.islands == 2);
    CHECK(o.starts[0].steps == 8);
    CHECK(o.starts[0].schedule.from == 16);
    CHECK(o.starts[0].schedule.to == 24);
    CHECK_FALSE(o.starts[0].held);
    const RunSnapshot v = run_view(2, 10, islands);
    CHECK_THROWS_WITH(p.admit(v, islands[0], 1), Catch::Contains("while round 2 is open"));
    CHECK_THROWS_WITH(p.admit(v, islands[2], 2), Catch::Contains("not in this round"));
    p.on_arrival(v, delta(islands[1], 2));
    CHECK_THROWS_WITH(p.admit(v, islands[1], 2), Catch::Contains("a second pseudo-gradient"));
    CHECK_FALSE(p.update_due(v));
    CHECK_FALSE(p.on_ready(v, islands[1]));  // delivered: not started again
    p.on_arrival(v, delta(islands[0], 2));
    CHECK(p.update_due(v));
    const std::vector<Contribution> all = p.take_update();
    REQUIRE(all.size() == 2);
    CHECK(all[0].island == 0);  // canonical order
    CHECK(all[1].island == 1);
    CHECK(p.after_update(run_view(3, 10, islands), true).empty());
    CHECK_FALSE(p.open());  // the host gathers islands for the next one
}

TEST_CASE("streaming: round r syncs fragment r mod P and covers the steps between two sends, as fragment_due says") {
    // H = 50, P = 4: the sends after steps 12, 25, 37 and 50 of each cycle.
    CHECK(streaming_span(0, 4, 50).from == 0);
    CHECK(streaming_span(0, 4, 50).to == 12);
    CHECK(streaming_span(1, 4, 50).to == 25);
    CHECK(streaming_span(3, 4, 50).from == 37);
    CHECK(streaming_span(3, 4, 50).to == 50);
    CHECK(streaming_span(5, 4, 50).from == 62);
    uint64_t at = 0;
    for (uint64_t r = 0; r < 12; ++r) {  // back to back, over the whole run
        const ScheduleSpan s = streaming_span(r, 4, 50);
        CHECK(s.from == at);
        at = s.to;
    }
    CHECK(at == 150);
    std::vector<std::string> log;
    std::vector<RunEvent> events;
    StreamingPolicy p(50, 4, 30, [&](const std::string& l, const RunEvent& e) {
        log.push_back(l);
        events.push_back(e);
    });
    const std::vector<IslandView> islands = {island("a", 0), island("b", 1)};
    const RoundPolicy::Opening o = p.open_round(run_view(1, 8, islands));
    REQUIRE(o.starts.size() == 2);
    CHECK(o.starts[0].steps == 13);
    CHECK(o.starts[0].schedule.from == 12);
    CHECK(o.starts[0].schedule.to == 25);
    CHECK_FALSE(o.starts[0].held);
    // A late Δ is dropped, never folded into another fragment's round.
    CHECK_THROWS_WITH(p.admit(run_view(2, 8, islands), islands[0], 1), Catch::Contains("while round 2"));
}

TEST_CASE("sync: the deadline closes a round unless a Δ is still moving; a leaver is not waited for") {
    std::vector<std::string> log;
    std::vector<RunEvent> events;
    SyncPolicy p(8, 30, false, [&](const std::string& l, const RunEvent& e) {
        log.push_back(l);
        events.push_back(e);
    });
    std::vector<IslandView> islands = {island("a", 0), island("b", 1)};
    p.open_round(run_view(0, 10, islands));
    p.on_arrival(run_view(0, 10, islands), delta(islands[0], 0));
    CHECK_FALSE(p.update_due(run_view(0, 10, islands, 29)));
    islands[1].delta_moving = true;
    islands[1].delta_bytes = 1000;
    CHECK_FALSE(p.update_due(run_view(0, 10, islands, 31)));
    CHECK_FALSE(p.update_due(run_view(0, 10, islands, 32)));
    REQUIRE(log.size() == 1);  // said once
    CHECK_THAT(log[0], Catch::Contains("still moving"));
    CHECK((events[0].kind == "deadline_waits" && events[0].peer == "b" && events[0].bytes == 1000));
    islands[1].delta_moving = false;
    CHECK(p.update_due(run_view(0, 10, islands, 33)));
    CHECK_THAT(log.back(), Catch::Contains("deadline passed"));
    CHECK((events.back().kind == "deadline_passed" && events.back().round == 0 && events.back().islands == 1));

    SyncPolicy q(8, 30, false, [](const std::string&, const RunEvent&) {});
    q.open_round(run_view(0, 10, islands));
    q.on_arrival(run_view(0, 10, islands), delta(islands[0], 0));
    CHECK(q.on_gone("b", false));  // waited for
    CHECK_FALSE(q.on_gone("b", false));
    CHECK(q.update_due(run_view(0, 10, islands)));  // the others left: close with what arrived
    SyncPolicy r(8, 30, false, [](const std::string&, const RunEvent&) {});
    r.open_round(run_view(0, 10, islands));
    r.on_gone("a", false);
    r.on_gone("b", false);
    CHECK_FALSE(r.update_due(run_view(0, 10, islands)));
    CHECK_FALSE(r.open());  // everyone left: gather again
}

TEST_CASE("sync, straggler = fold: a late Δ joins the next update, and its island is told it is held") {
    SyncPolicy p(8, 30, true, [](const std::string&, const RunEvent&) {});
    std::vector<IslandView> islands = {island("a", 0), island("b", 1)};
    p.open_round(run_view(0, 10, islands));
    p.on_arrival(run_view(0, 10, islands), delta(islands[0], 0));
    CHECK(p.update_due(run_view(0, 10, islands, 31)));
    CHECK(p.take_update().size() == 1);
    p.after_update(run_view(1, 10, islands), true);
    // b's Δ of round 0 arrives during round 1's gathering: folded.
    const Arrival late = p.on_arrival(run_view(1, 10, islands), delta(islands[1], 0));
    CHECK_THAT(late.note, Catch::Contains("folded"));
    CHECK((late.event.kind == "folded" && late.event.round == 1 && late.event.island == 1));
    const RoundPolicy::Opening o = p.open_round(run_view(1, 10, islands));
    REQUIRE(o.starts.size() == 2);
    CHECK_FALSE(o.starts[0].held);
    REQUIRE(o.starts[1].held);
    CHECK(*o.starts[1].held == 0);
    p.on_arrival(run_view(1, 10, islands), delta(islands[0], 1));
    p.on_arrival(run_view(1, 10, islands), delta(islands[1], 1));
    const std::vector<Contribution> all = p.take_update();
    REQUIRE(all.size() == 3);
    CHECK((all[1].island == 1 && all[1].round == 0));  // island, then round
    CHECK((all[2].island == 1 && all[2].round == 1));
    // Two rounds late is too late, and a revoked island's folded Δ goes with it.
    CHECK_THROWS(p.admit(run_view(3, 10, islands), islands[1], 1));
    p.after_update(run_view(2, 10, islands), true);
    p.on_arrival(run_view(2, 10, islands), delta(islands[1], 1));
    p.on_gone("b", true);
    p.open_round(run_view(2, 10, islands));
    p.on_arrival(run_view(2, 10, islands), delta(islands[0], 2));
    CHECK(p.take_update().size() == 1);
}

TEST_CASE("async: each Δ is its own update; DLU steps; stale ones scaled or refused and their island restarted") {
    std::vector<IslandView> islands = {island("fast", 0, 4.0f), island("slow", 1, 1.0f)};
    AsyncPolicy p(40, StalenessRule{1, StaleAction::refuse});
    const RoundPolicy::Opening o = p.open_round(run_view(0, 20, islands));
    REQUIRE(o.starts.size() == 2);
    CHECK(o.starts[0].steps == 40);
    CHECK(o.starts[1].steps == 10);  // a quarter of the fastest's speed
    CHECK(o.starts[0].schedule.from == 0);
    CHECK(o.starts[0].schedule.to == 80);  // two islands: its Δ lands about two updates later
    CHECK(p.open());

    p.on_arrival(run_view(0, 20, islands), delta(islands[0], 0));
    CHECK(p.update_due(run_view(0, 20, islands)));
    CHECK(p.take_update().size() == 1);
    const std::vector<Start> again = p.after_update(run_view(1, 20, islands), true);
    REQUIRE(again.size() == 1);
    CHECK(again[0].key == "fast");
    CHECK(again[0].schedule.from == 40);
    CHECK_FALSE(p.update_due(run_view(1, 20, islands)));

    p.on_arrival(run_view(1, 20, islands), delta(islands[1], 0));  // 1 update stale: within
    p.take_update();
    p.after_update(run_view(2, 20, islands), true);
    const Arrival refused = p.on_arrival(run_view(4, 20, islands), delta(islands[1], 2));  // 2 stale
    CHECK_THAT(refused.note, Catch::Contains("island 1 (slow)") && Catch::Contains("2 updates stale"));
    CHECK((refused.event.kind == "stale" && refused.event.type == "refused" && refused.event.island == 1 &&
           refused.event.stale == 2));
    REQUIRE(refused.restart);
    CHECK(refused.restart->key == "slow");
    CHECK_FALSE(p.update_due(run_view(4, 20, islands)));
    CHECK_THROWS(p.admit(run_view(4, 20, islands), islands[0], 5));  // ahead of the host

    AsyncPolicy d(40, StalenessRule{0, StaleAction::downweight});
    d.open_round(run_view(0, 20, islands));
    const Arrival scaled = d.on_arrival(run_view(3, 20, islands), delta(islands[1], 0, 2.0f));
    CHECK_THAT(scaled.note, Catch::Contains("scaled by 0.25"));
    CHECK((scaled.event.type == "downweighted" && scaled.event.stale == 3 && scaled.event.scale == 0.25));
    const std::vector<Contribution> one = d.take_update();
    REQUIRE(one.size() == 1);
    CHECK(one[0].delta[0] == 0.5f);  // 2 * 1/(1+3)
    // A revoked island's Δ not yet applied goes with it.
    d.on_arrival(run_view(3, 20, islands), delta(islands[0], 3));
    d.on_gone("fast", true);
    CHECK_FALSE(d.update_due(run_view(3, 20, islands)));
    islands[1].busy = true;
    CHECK_FALSE(d.on_ready(run_view(3, 20, islands), islands[1]));  // still training
    CHECK(d.on_ready(run_view(3, 20, islands), islands[0]));
}
