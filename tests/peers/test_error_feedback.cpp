// tests/peers/test_error_feedback.cpp: error feedback that matches what was applied, at the codec and
// at the island. A residual saved before an encode and put back makes the next encode as if the first
// had never happened; a residual kept outside the codec gives the codec's own bytes; an island whose Δ is dropped ends with its residual bit-identical to an
// island that never sent it; a resync starts afresh; and a round's steps follow the lr placement the
// host sends.
#include <catch2/catch.hpp>

#include <limits>

#include "compression/codec.h"
#include "core/error.h"
#include "peers/diloco/island_worker.h"
#include "tests/peers/tiny_island.h"

using namespace arch;
using arch::test::same_bits;
using arch::test::noise;

namespace {

std::vector<float> copy(std::span<const float> s) { return {s.begin(), s.end()}; }

}  // namespace

TEST_CASE("codec: a residual put back makes the next encode as if the dropped one never happened") {
    for (const char* spec : {"fp4+ef+zstd", "int8:block=64+ef", "topk:frac=0.05+ef"}) {
        INFO(spec);
        auto sent = compression::make_codec(spec);
        auto never = compression::make_codec(spec);
        const auto x1 = noise(4096, 1, 0.01f), x2 = noise(4096, 2, 0.01f), x3 = noise(4096, 3, 0.01f);
        sent->encode(x1, 0);
        never->encode(x1, 0);
        const std::vector<float> before = copy(sent->residual(0));
        sent->encode(x2, 0);  // the message the host drops
        REQUIRE_FALSE(same_bits(sent->residual(0), before));
        sent->set_residual(0, before);
        CHECK(same_bits(sent->residual(0), never->residual(0)));
        CHECK(sent->encode(x3, 0) == never->encode(x3, 0));
        sent->set_residual(0, {});  // empty: reset
        CHECK(sent->residual(0).empty());
    }
    auto plain = compression::make_codec("int8");
    plain->set_residual(0, std::vector<float>(8, 1.0f));  // no error feedback: nothing to set
    CHECK(plain->residual(0).empty());
}

TEST_CASE("codec: error feedback kept by the caller gives the codec's own bytes and residual, bit for bit") {
    for (const char* spec : {"fp4+ef+zstd", "int8:block=64+ef", "int4:block=32+ef", "sign:block=64+ef", "topk:frac=0.05+ef", "uint8+ef"}) {
        INFO(spec);
        auto own = compression::make_codec(spec);
        auto outside = compression::make_codec(spec);
        std::vector<float> residual(4096, 0.0f);
        for (uint64_t round = 1; round <= 3; ++round) {
            const std::vector<float> x = noise(4096, round, 0.01f);
            std::vector<float> y(4096);
            for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[i] + residual[i];
            CHECK(outside->encode_feedback(y) == own->encode(x, 0));
            residual = y;
            CHECK(same_bits(residual, copy(own->residual(0))));
        }
        std::vector<float> bad(4096, 0.0f);
        bad[9] = std::numeric_limits<float>::infinity();
        const std::vector<float> before = bad;
        CHECK_THROWS_AS(outside->encode_feedback(bad), Error);
        CHECK(same_bits(bad, before));
    }
}

TEST_CASE("island: a dropped Δ leaves the residual bit-identical to an island that never sent it") {
    test::TinyIsland tiny;
    diloco::IslandWorker sent(tiny.model, tiny.train, "fp4+ef+zstd");
    diloco::IslandWorker never(tiny.model, tiny.train, "fp4+ef+zstd");
    const std::vector<float> theta = tiny.theta();
    // Round 0: both send it and the host applies it.
    const diloco::RoundPlan r0{0, 4, {}};
    CHECK(sent.run_round(theta, r0).payload == never.run_round(theta, r0).payload);
    CHECK(sent.unsettled() == std::vector<uint64_t>{0});
    CHECK(sent.settle(0, true));
    never.settle(0, true);
    REQUIRE_FALSE(sent.residual().empty());
    const std::vector<float> after_round0 = copy(never.residual());
    // Round 1: one island sends a Δ the host drops (a straggler, screened out, too stale).
    sent.run_round(theta, diloco::RoundPlan{1, 4, {}});
    REQUIRE_FALSE(same_bits(sent.residual(), after_round0));
    CHECK(sent.settle(1, false));
    CHECK(same_bits(sent.residual(), never.residual()));
    CHECK(sent.unsettled().empty());
    // Settling what was never kept changes nothing.
    CHECK(sent.settle(7, false));
    CHECK(same_bits(sent.residual(), after_round0));

    // Two Δs out (a folded straggler): dropping the newest is exact. The older one counted as applied
    // once the newer was encoded on top of it (no copy of the residual is kept), so dropping it after
    // cannot be undone: the residual stays.
    sent.run_round(theta, diloco::RoundPlan{2, 2, {}});
    const std::vector<float> after_2 = copy(sent.residual());
    sent.run_round(theta, diloco::RoundPlan{3, 2, {}});
    CHECK(sent.unsettled() == std::vector<uint64_t>{2, 3});
    CHECK(sent.settle(3, false));
    CHECK(same_bits(sent.residual(), after_2));
    CHECK_FALSE(sent.settle(2, false));
    CHECK(same_bits(sent.residual(), after_2));
    CHECK(sent.unsettled().empty());
    // Dropping the older while the newer stands cannot be undone exactly: the residual stays.
    sent.run_round(theta, diloco::RoundPlan{4, 2, {}});
    sent.run_round(theta, diloco::RoundPlan{5, 2, {}});
    const std::vector<float> now = copy(sent.residual());
    CHECK_FALSE(sent.settle(4, false));
    CHECK(same_bits(sent.residual(), now));
    CHECK(sent.settle(5, true));
    // A resync starts afresh.
    sent.run_round(theta, diloco::RoundPlan{6, 2, {}});
    sent.reset_residual();
    CHECK(sent.residual().empty());
    CHECK(sent.unsettled().empty());
    // What is kept is bounded, whatever a host does.
    for (uint64_t r = 10; r < 20; ++r) sent.run_round(theta, diloco::RoundPlan{r, 1, {}});
    CHECK(sent.unsettled().size() == diloco::IslandWorker::kMaxUnsettled);
}

TEST_CASE("island: a codec without error feedback keeps nothing to settle") {
    test::TinyIsland tiny;
    diloco::IslandWorker w(tiny.model, tiny.train, "int8:block=256+zstd:1");
    w.run_round(tiny.theta(), diloco::RoundPlan{0, 2, {}});
    CHECK(w.unsettled().empty());
    CHECK(w.settle(0, false));
    CHECK(w.residual().empty());
}

TEST_CASE("island: a round's learning rates follow the schedule placement the host sent") {
    test::TinyIsland tiny;  // schedule: rounds x H = 16 positions, warmup 2
    diloco::IslandWorker w(tiny.model, tiny.train, "fp32");
    std::vector<float> lrs;
    auto record = [&](const StepStats& s) { lrs.push_back(s.lr); };
    // Two steps a round (a slow island) over the four positions of each round.
    for (uint64_t round = 0; round < 4; ++round)
        w.run_round(tiny.theta(), diloco::RoundPlan{round, 2, rounds::ScheduleSpan{round * 4, round * 4 + 4}}, record);
    REQUIRE(lrs.size() == 8);
    const LrSchedule& s = tiny.train.schedule;
    CHECK(lrs[0] == s.at(0));
    CHECK(lrs[1] == std::min(s.at(2), s.max_lr));  // position 2, past its own warmup of 2 steps
    CHECK(lrs[7] == s.at(14));                     // the last step sits near the end of the cosine
    CHECK(lrs[7] < s.at(7));                       // where its own step count would have put it
    // Without a placement the island reads the schedule at its own step count, as before.
    diloco::IslandWorker plain(tiny.model, tiny.train, "fp32");
    lrs.clear();
    plain.run_round(tiny.theta(), 3, record);
    CHECK(lrs == std::vector<float>{s.at(0), s.at(1), s.at(2)});
}
