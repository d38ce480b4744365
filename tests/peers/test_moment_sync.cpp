// tests/peers/test_moment_sync.cpp: the host's DES-LOC pool (peers/moment_sync.h) as a unit: the
// token-weighted mean of the moments of the islands an update used, and the screen that leaves out an
// island whose finite moments are far above the round's median norm (outer.screen_factor), so one
// island cannot swamp every island's m and v; outer.screen = off keeps them all. Moments no AdamW
// could hold (|m| beyond k sqrt(v), or beyond what clipped gradients give) are refused on arrival.
// The moments cross in bf16 (protocol 10): the mean is of the values as they came, rounded once.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/bf16.h"
#include "peers/moment_sync.h"
#include "peers/protocol.h"
#include "peers/run_config.h"

using namespace arch;

namespace {

constexpr std::size_t kParams = 64;

struct IslandMoments {  // one island's contribution and the moments it sent
    rounds::Contribution c;
    std::vector<float> m, v;
};

IslandMoments island(uint32_t index, float scale, double tokens = 100) {
    IslandMoments i;
    i.c.island = index;
    i.c.key = "key-" + std::to_string(index);
    i.c.name = "island " + std::to_string(index);
    i.c.round = 0;
    i.c.tokens = tokens;
    for (std::size_t k = 0; k < kParams; ++k) {  // as AdamW could hold them: |m| = 0.5 sqrt(v) and below
        const float v = scale * scale * 1e-6f * static_cast<float>((k * 3 + index) % 5 + 1);
        i.v.push_back(v);
        i.m.push_back(0.5f * std::sqrt(v) * static_cast<float>((k + index) % 7 + 1) / 7.0f * ((k % 2) ? 1.0f : -1.0f));
    }
    return i;
}

struct Pooled {
    MomentPool::Mean mean;
    protocol::Moments moments;  // the mean as the update carries it, widened back to fp32
};

Pooled pooled(const RunConfig& c, const std::vector<IslandMoments>& islands) {
    MomentPool pool(c, kParams);
    std::vector<rounds::Contribution> used;
    for (const IslandMoments& i : islands) {
        pool.accept(i.c.key, protocol::encode_moments(0, i.m, i.v), true, 0, 0);
        used.push_back(i.c);
    }
    Pooled p;
    p.mean = pool.choose(used, 0);
    if (p.mean.islands.empty()) return p;
    std::vector<std::byte> out(protocol::moments_bytes(kParams));
    pool.write(p.mean, 0, out);
    p.moments = protocol::decode_moments(out, kParams);
    return p;
}

float bf16(float x) { return bf16_to_float(float_to_bf16(x)); }  // as it crosses the wire

// grad_clip = 0: no bound on the moments' size but the screen's (the median of the round).
RunConfig every_round(const std::string& screen = "clip", double grad_clip = 0) {
    return parse_run_config("[inner]\ngrad_clip = " + std::to_string(grad_clip) + "\n[outer]\nsync_moments_every = 1\nscreen = \"" +
                                screen + "\"\n",
                            "run.toml");
}

}  // namespace

TEST_CASE("the mean of the moments is weighted by tokens, in island order") {
    const std::vector<IslandMoments> islands = {island(0, 1.0f, 100), island(1, 1.0f, 300), island(2, 1.0f, 100)};
    const auto [mean, moments] = pooled(every_round(), islands);
    CHECK(mean.islands == std::vector<uint32_t>{0, 1, 2});
    CHECK(mean.left_out.empty());
    CHECK(moments.round == 0);
    for (std::size_t k = 0; k < kParams; ++k) {
        // Each island's value as it came (bf16), summed in fp32 in island order, rounded once.
        const float m = bf16(0.0f + 0.2f * bf16(islands[0].m[k]) + 0.6f * bf16(islands[1].m[k]) + 0.2f * bf16(islands[2].m[k]));
        const float v = bf16(0.0f + 0.2f * bf16(islands[0].v[k]) + 0.6f * bf16(islands[1].v[k]) + 0.2f * bf16(islands[2].v[k]));
        CHECK(moments.m[k] == m);
        CHECK(moments.v[k] == v);
        // And within bf16's rounding (2^-8 each way, and once more) of the exact mean.
        const double exact = 0.2 * islands[0].m[k] + 0.6 * islands[1].m[k] + 0.2 * islands[2].m[k];
        CHECK(moments.m[k] == Approx(exact).epsilon(3 * std::ldexp(1.0, -8)));
    }
    // The hash the host logs is of the mean as an island holds it.
    CHECK(mean.hash == moments_hash(moments.m, moments.v));
}

TEST_CASE("finite moments far above the round's median norm are left out of the mean, and said so") {
    std::vector<IslandMoments> islands = {island(0, 1.0f), island(1, 1.2f), island(2, 0.9f), island(3, 1.0f)};
    SECTION("a v a million times too large") {
        for (float& x : islands[2].v) x *= 1e6f;
        const auto [mean, moments] = pooled(every_round(), islands);
        CHECK(mean.islands == std::vector<uint32_t>{0, 1, 3});
        REQUIRE(mean.left_out.size() == 1);
        CHECK_THAT(mean.left_out[0], Catch::Contains("island 2: |v|"));
        for (std::size_t k = 0; k < kParams; ++k) CHECK(moments.v[k] < 1e-4f);
    }
    SECTION("an m a thousand times too large (and v to match: AdamW's own bound holds)") {
        for (float& x : islands[1].m) x *= 1e3f;
        for (float& x : islands[1].v) x *= 1e6f;
        const MomentPool::Mean mean = pooled(every_round(), islands).mean;
        CHECK(mean.islands == std::vector<uint32_t>{0, 2, 3});
        REQUIRE(mean.left_out.size() == 1);
        CHECK_THAT(mean.left_out[0], Catch::Contains("island 1: |m|"));
    }
    SECTION("outer.screen = off: kept") {
        for (float& x : islands[2].v) x *= 1e6f;
        const MomentPool::Mean mean = pooled(every_round("off"), islands).mean;
        CHECK(mean.islands == std::vector<uint32_t>{0, 1, 2, 3});
        CHECK(mean.left_out.empty());
    }
}

TEST_CASE("moments AdamW could not have made are refused on arrival, with no median needed") {
    // One island, so the screen has no median: AdamW's own bounds are all there is.
    const RunConfig c = every_round("clip", 1.0);
    auto accept = [&](const std::vector<float>& m, const std::vector<float>& v) {
        MomentPool pool(c, kParams);
        pool.accept("key-0", protocol::encode_moments(0, m, v), true, 0, 0);
    };
    IslandMoments honest = island(0, 1.0f);
    CHECK_NOTHROW(accept(honest.m, honest.v));
    SECTION("one m beyond 1.165 sqrt(v), the rest as AdamW's") {
        honest.m[9] = 1.2f * std::sqrt(honest.v[9]);
        CHECK_THROWS_WITH(accept(honest.m, honest.v), Catch::Contains("at value 9: AdamW keeps |m| within 1.165 sqrt(v)"));
    }
    SECTION("m with a v of zero") {
        honest.v[3] = 0.0f;
        CHECK_THROWS_WITH(accept(honest.m, honest.v), Catch::Contains("at value 3"));
    }
    SECTION("a v no clipped gradient makes: its sum above grad_clip²") {
        std::vector<float> big_v(kParams, 2.0f / kParams), no_m(kParams, 0.0f);
        CHECK_THROWS_WITH(accept(no_m, big_v), Catch::Contains("grad_clip"));
        CHECK_NOTHROW(MomentPool(every_round("clip", 2.0), kParams)
                          .accept("key-0", protocol::encode_moments(0, no_m, big_v), true, 0, 0));  // grad_clip 2 allows 4
    }
    SECTION("an |m| above grad_clip, within its v") {
        std::vector<float> m(kParams, 0.2f), v(kParams, 0.04f);  // |m| = 1.6, sum of v 2.56: for grad_clip 1.6 and up
        CHECK_THROWS_WITH(accept(m, v), Catch::Contains("grad_clip"));
    }
}
