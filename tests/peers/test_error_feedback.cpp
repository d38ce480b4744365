// tests/peers/test_error_feedback.cpp: error feedback that matches what was applied, at the codec and
// at the island. A residual saved before an encode and put back makes the next encode as if the first
// had never happened; a residual kept outside the codec gives the codec's own bytes; an island's
// residual, kept in place, is Δ plus the last one less what its payload carries (checked against a
// second implementation), applied or dropped; a resync starts afresh; and a round's steps follow the
// lr placement the host sends.
#include <catch2/catch.hpp>

#include <algorithm>
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
            CHECK(outside->encode_feedback(y, round == 2) == own->encode(x, 0));  // finite known by the caller, or checked
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

TEST_CASE("codec: fp4's residual is the input less the payload's own decode, bit for bit, at its edges") {
    // The residual fp4 leaves as it encodes, against decode() of the payload (a second implementation), on
    // blocks of values on the rounding thresholds, ±0, a block whose scale is subnormal and one whose
    // decode reaches FLT_MAX.
    const std::size_t block = 32;
    std::vector<float> y(6 * block, 0.0f);
    const float s = 0.01f;  // block 0: absmax 6 s, and every threshold of v = |x| / s
    const float on[] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f};
    for (std::size_t i = 0; i < block; ++i) y[i] = (i % 2 ? -1.0f : 1.0f) * on[i % 8] * s * (i % 3 == 0 ? 1.0f : 1.0000001f);
    y[block] = -0.0f;  // block 1: zeros of both signs and one value
    y[block + 1] = 0.0f;
    y[block + 2] = -3e-3f;
    for (std::size_t i = 0; i < block; ++i) y[2 * block + i] = 1e-42f * static_cast<float>(i % 5) * (i % 2 ? -1.0f : 1.0f);
    for (std::size_t i = 0; i < block; ++i) y[3 * block + i] = std::numeric_limits<float>::max() * (i % 4 ? -0.3f : 1.0f);
    const std::vector<float> x3 = noise(2 * block, 5, 0.02f);
    std::copy(x3.begin(), x3.end(), y.begin() + 4 * block);
    const std::vector<float> before = y;
    auto codec = compression::make_codec("fp4:block=32+ef");
    const std::vector<std::byte> payload = codec->encode_feedback(y);
    std::vector<float> sent(y.size()), expected(y.size());
    compression::decode(payload, sent);
    for (std::size_t i = 0; i < y.size(); ++i) expected[i] = before[i] - sent[i];
    CHECK(same_bits(y, expected));
}

TEST_CASE("island: the residual is Δ plus the last one, less what the payload carries, applied or dropped") {
    test::TinyIsland tiny;
    for (const char* spec : {"fp4+ef+zstd", "int8:block=64+ef", "topk:frac=0.05+ef"}) {
        INFO(spec);
        diloco::IslandWorker w(tiny.model, tiny.train, spec);
        auto own = compression::make_codec(spec);
        const std::vector<float> theta = tiny.theta();
        std::vector<float> last;  // none yet: zeros
        for (uint64_t round = 0; round < 3; ++round) {
            const diloco::RoundResult r = w.run_round(theta, diloco::RoundPlan{round, 2, {}});
            // A second implementation: Δ = θ − θ_i taken whole, the last residual added, the payload's
            // own decode taken off.
            std::vector<float> theta_i(theta.size()), sent(theta.size()), expected(theta.size());
            w.get_params(theta_i);
            compression::decode(r.payload, sent);
            std::vector<float> delta(theta.size());
            for (std::size_t i = 0; i < theta.size(); ++i) {
                delta[i] = theta[i] - theta_i[i];
                const float y = delta[i] + (last.empty() ? 0.0f : last[i]);
                expected[i] = y - sent[i];
            }
            CHECK(same_bits(w.residual(), expected));
            // The bytes are the codec's own error feedback's, bit for bit.
            CHECK(r.payload == own->encode(delta, 0));
            CHECK(same_bits(w.residual(), copy(own->residual(0))));
            CHECK(w.unsettled() == std::vector<uint64_t>{round});
            w.settle(round);  // applied or dropped: the residual stands either way
            CHECK(w.unsettled().empty());
            CHECK(same_bits(w.residual(), expected));
            last = expected;
        }
    }
}

TEST_CASE("island: what is open is bounded, a resync starts afresh, and a non-finite Δ sends nothing") {
    test::TinyIsland tiny;
    diloco::IslandWorker w(tiny.model, tiny.train, "fp4+ef+zstd");
    const std::vector<float> theta = tiny.theta();
    for (uint64_t r = 10; r < 20; ++r) w.run_round(theta, diloco::RoundPlan{r, 1, {}});
    CHECK(w.unsettled() == std::vector<uint64_t>{16, 17, 18, 19});  // kMaxUnsettled, the newest
    w.settle(7);  // never sent: nothing changes
    CHECK(w.unsettled().size() == diloco::IslandWorker::kMaxUnsettled);
    w.reset_residual();
    CHECK(w.residual().empty());
    CHECK(w.unsettled().empty());
    // A θ with an Inf makes Δ non-finite: the encode throws, and error feedback starts afresh.
    w.run_round(theta, diloco::RoundPlan{20, 1, {}});
    std::vector<float> bad = theta;
    bad[3] = std::numeric_limits<float>::infinity();
    diloco::RoundResult r;
    CHECK_THROWS_AS(w.encode_round(bad, r, 21), Error);
    CHECK(r.payload.empty());
    CHECK(w.unsettled().empty());
    for (float e : w.residual()) REQUIRE(e == 0.0f);
}

TEST_CASE("island: a codec without error feedback keeps nothing to settle") {
    test::TinyIsland tiny;
    diloco::IslandWorker w(tiny.model, tiny.train, "int8:block=256+zstd:1");
    w.run_round(tiny.theta(), diloco::RoundPlan{0, 2, {}});
    CHECK(w.unsettled().empty());
    w.settle(0);
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
