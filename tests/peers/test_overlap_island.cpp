// tests/peers/test_overlap_island.cpp: an island's side of overlapped rounds (run.mode = "overlap"),
// driven by hand. After its send it trains the next round's steps (at most H − 1 of them); the update
// is merged the moment it lands, θ_i ← θ_{t+1} + (θ_i − θ_i at the send), bit for bit; the next round
// trains only the steps left and its Δ is θ_{t+1} − θ_i; a round_start ends the overlap; a round out of
// step with θ_i starts from θ; with error feedback a dropped Δ's residual stands; and with
// overlap.proxy_scale s the next round starts from θ + s × (θ_i − θ), its Δ untouched.
#include <catch2/catch.hpp>

#include <cmath>

#include "compression/codec.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/overlap_island.h"
#include "tests/peers/tiny_island.h"

using namespace arch;
using arch::test::same_bits;
using namespace arch::diloco;

namespace {

std::vector<float> params(IslandWorker& w) {
    std::vector<float> out(w.num_params());
    w.get_params(out);
    return out;
}

constexpr int kH = 4;
RoundPlan plan(uint64_t round) { return RoundPlan{round, kH, rounds::ScheduleSpan{round * kH, (round + 1) * kH}}; }

// The host's update of one island's Δ, applied to the replica.
void host_applies(GlobalModel& replica, const RoundResult& r) {
    const std::vector<float> delta = compression::decode(r.payload, replica.theta().size());
    const outer::WeightedDelta c{delta, r.tokens};
    replica.apply_update(replica.make_update({&c, 1}, 0), 0);
}

}  // namespace

TEST_CASE("overlap island: trains on after its send, merges the update as it lands, and sends that progress next") {
    test::TinyIsland tiny;
    IslandWorker w(tiny.model, tiny.train, "fp32");
    GlobalModel replica(tiny.theta(), OuterConfig{.lr = 0.7f, .momentum = 0.5f});
    OverlapIsland island(w, 1.0f);  // the plain carry

    const RoundResult r0 = island.run_round(replica, plan(0), 0, true, {});
    CHECK(r0.steps == kH);
    const std::vector<float> sent = params(w);
    REQUIRE(island.overlapping());
    island.overlap_step();
    island.overlap_step();
    CHECK(island.overlapping());  // H − 1 = 3 steps may overlap
    host_applies(replica, r0);
    island.updated(0);
    CHECK(island.merge_due());  // at once: no waiting for the overlap to end
    const std::vector<float> before = params(w);
    const Merged merged = island.merge(replica);
    CHECK(merged.overlapped == 2);
    const std::vector<float> after = params(w);
    const std::span<const float> theta1 = replica.theta();
    std::vector<float> want(theta1.size());
    for (std::size_t k = 0; k < want.size(); ++k) want[k] = theta1[k] + (before[k] - sent[k]);
    CHECK(same_bits(after, want));
    CHECK_FALSE(same_bits(before, sent));  // the two steps moved θ_i: their progress is carried

    // The overlap goes on after the merge until the round_start comes; then round 1 trains what is left.
    CHECK(island.overlapping());
    island.overlap_step();
    island.next_round_known();
    CHECK_FALSE(island.busy());
    const RoundResult r1 = island.run_round(replica, plan(1), 0, false, {});
    CHECK(r1.steps == 1);  // 3 of round 1's 4 steps were trained while round 0's sync travelled
    CHECK(r1.tokens == Approx(kH * 2.0 * 16));  // weighted as the whole round's (B = 2, T = 16)
    const std::vector<float> delta1 = compression::decode(r1.payload, theta1.size());
    const std::vector<float> end = params(w);
    std::vector<float> want_delta(end.size());
    for (std::size_t k = 0; k < end.size(); ++k) want_delta[k] = replica.theta()[k] - end[k];
    CHECK(same_bits(delta1, want_delta));
    CHECK_FALSE(island.overlapping());  // the run's last round: nothing after it
}

TEST_CASE("overlap island: a round out of step starts from θ, and the overlap stops at H − 1 steps") {
    test::TinyIsland tiny;
    IslandWorker w(tiny.model, tiny.train, "fp32");
    GlobalModel replica(tiny.theta(), OuterConfig{});
    OverlapIsland island(w, 1.0f);  // the plain carry
    island.run_round(replica, plan(0), 0, true, {});
    for (int i = 0; i < kH - 1; ++i) island.overlap_step();
    CHECK_FALSE(island.overlapping());
    CHECK(island.busy() == false);
    CHECK_THROWS_WITH(island.overlap_step(), "no overlap step is due");
    // Round 0 started again (its update refused): θ_i is ahead of it, so the round starts from θ.
    const RoundResult again = island.run_round(replica, plan(0), 0, true, {});
    CHECK(again.steps == kH);
    // A resync: the same from a fresh start.
    island.restart();
    CHECK_FALSE(island.busy());
    CHECK(island.run_round(replica, plan(1), 0, false, {}).steps == kH);
}

TEST_CASE("overlap island: with error feedback, a dropped Δ's residual stands while the island trains on") {
    test::TinyIsland tiny;
    IslandWorker w(tiny.model, tiny.train, "int8:block=64+ef");
    GlobalModel replica(tiny.theta(), OuterConfig{});
    OverlapIsland island(w, 1.0f);  // the plain carry
    const RoundResult r0 = island.run_round(replica, plan(0), 0, true, {});
    w.settle(0);  // update 0 named it
    const std::vector<float> after_0(w.residual().begin(), w.residual().end());
    REQUIRE_FALSE(after_0.empty());
    island.overlap_step();
    host_applies(replica, r0);
    island.updated(0);
    island.merge(replica);
    island.next_round_known();
    island.run_round(replica, plan(1), 0, true, {});
    const std::vector<float> after_1(w.residual().begin(), w.residual().end());
    CHECK_FALSE(same_bits(after_1, after_0));
    CHECK(w.unsettled() == std::vector<uint64_t>{1});
    island.overlap_step();  // trains on while round 1's Δ travels
    w.settle(1);            // update 1 did not name it: what its rounding left stands
    CHECK(w.unsettled().empty());
    CHECK(same_bits(std::vector<float>(w.residual().begin(), w.residual().end()), after_1));
}

TEST_CASE("overlap island: a round whose H changed trains what is left of it, at least one step") {
    test::TinyIsland tiny;
    IslandWorker w(tiny.model, tiny.train, "fp32");
    GlobalModel replica(tiny.theta(), OuterConfig{});
    // H from the link: rounds of a few steps spread over 8 schedule positions each.
    const auto plan_of = [](uint64_t round, int steps) {
        return RoundPlan{round, steps, rounds::ScheduleSpan{round * 8, (round + 1) * 8}};
    };
    for (const auto& [next_h, trained] : std::vector<std::pair<int, int>>{{6, 3}, {2, 1}}) {
        INFO("the next round's H " << next_h);
        OverlapIsland island(w, 1.0f);  // the plain carry
        const RoundResult r0 = island.run_round(replica, plan_of(0, 4), 0, true, {});
        for (int i = 0; i < 3; ++i) island.overlap_step();  // as if round 1 had round 0's H: 3 of 4
        CHECK_FALSE(island.overlapping());
        host_applies(replica, r0);
        island.updated(0);
        island.merge(replica);
        const RoundResult r1 = island.run_round(replica, plan_of(1, next_h), 0, false, {});
        CHECK(r1.steps == trained);
        CHECK(r1.tokens == Approx(std::min(3 + trained, next_h) * 2.0 * 16));  // the host caps the weight at H
    }
}

TEST_CASE("overlap island: with a proxy scale the next round starts from θ + s × its progress, and carries from there") {
    test::TinyIsland tiny;
    IslandWorker w(tiny.model, tiny.train, "fp32");
    GlobalModel replica(tiny.theta(), OuterConfig{.lr = 0.7f, .momentum = 0.5f});
    const std::vector<float> theta0(replica.theta().begin(), replica.theta().end());
    OverlapIsland island(w, 0.85f);
    const RoundResult r0 = island.run_round(replica, plan(0), 0, true, {});
    const std::vector<float> delta0 = compression::decode(r0.payload, theta0.size());  // θ − θ_i, fp32: exact
    const std::vector<float> start = params(w);
    double moved = 0;
    for (std::size_t k = 0; k < start.size(); ++k) {
        REQUIRE(start[k] == Approx(theta0[k] - 0.85f * delta0[k]).margin(1e-6));
        moved += std::abs(delta0[k]);
    }
    CHECK(moved > 0);  // the round trained: the scale had something to scale
    island.overlap_step();
    const std::vector<float> before = params(w);
    host_applies(replica, r0);
    island.updated(0);
    island.merge(replica);
    const std::vector<float> after = params(w);
    for (std::size_t k = 0; k < after.size(); ++k)  // the step since the scaled start, carried onto θ_1
        REQUIRE(after[k] == replica.theta()[k] + (before[k] - start[k]));
}
