// tests/peers/test_moment_sync.cpp: the host's DES-LOC pool (peers/moment_sync.h) as a unit: the
// token-weighted mean of the moments of the islands an update used, and the screen that leaves out an
// island whose finite moments are far above the round's median norm (outer.screen_factor), so one
// island cannot swamp every island's m and v; outer.screen = off keeps them all.
#include <catch2/catch.hpp>

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
    for (std::size_t k = 0; k < kParams; ++k) {
        i.m.push_back(scale * 1e-3f * static_cast<float>((k + index) % 7 + 1));
        i.v.push_back(scale * scale * 1e-6f * static_cast<float>((k * 3 + index) % 5 + 1));
    }
    return i;
}

MomentPool::Mean pooled(const RunConfig& c, const std::vector<IslandMoments>& islands) {
    MomentPool pool(c, kParams);
    std::vector<rounds::Contribution> used;
    for (const IslandMoments& i : islands) {
        pool.accept(i.c.key, protocol::encode_moments(0, i.m, i.v), true, 0, 0);
        used.push_back(i.c);
    }
    return pool.take(used, 0);
}

RunConfig every_round(const std::string& screen = "clip") {
    RunConfig c = parse_run_config("[outer]\nsync_moments_every = 1\nscreen = \"" + screen + "\"\n", "run.toml");
    return c;
}

}  // namespace

TEST_CASE("the mean of the moments is weighted by tokens, in island order") {
    const std::vector<IslandMoments> islands = {island(0, 1.0f, 100), island(1, 1.0f, 300), island(2, 1.0f, 100)};
    const MomentPool::Mean mean = pooled(every_round(), islands);
    CHECK(mean.islands == std::vector<uint32_t>{0, 1, 2});
    CHECK(mean.left_out.empty());
    for (std::size_t k = 0; k < kParams; ++k) {
        const double m = 0.2 * islands[0].m[k] + 0.6 * islands[1].m[k] + 0.2 * islands[2].m[k];
        CHECK(mean.m[k] == Approx(m).epsilon(1e-6));
    }
}

TEST_CASE("finite moments far above the round's median norm are left out of the mean, and said so") {
    std::vector<IslandMoments> islands = {island(0, 1.0f), island(1, 1.2f), island(2, 0.9f), island(3, 1.0f)};
    SECTION("a v a million times too large") {
        for (float& x : islands[2].v) x *= 1e6f;
        const MomentPool::Mean mean = pooled(every_round(), islands);
        CHECK(mean.islands == std::vector<uint32_t>{0, 1, 3});
        REQUIRE(mean.left_out.size() == 1);
        CHECK_THAT(mean.left_out[0], Catch::Contains("island 2: |v|"));
        for (std::size_t k = 0; k < kParams; ++k) CHECK(mean.v[k] < 1e-4f);
    }
    SECTION("an m a thousand times too large") {
        for (float& x : islands[1].m) x *= 1e3f;
        const MomentPool::Mean mean = pooled(every_round(), islands);
        CHECK(mean.islands == std::vector<uint32_t>{0, 2, 3});
        REQUIRE(mean.left_out.size() == 1);
        CHECK_THAT(mean.left_out[0], Catch::Contains("island 1: |m|"));
    }
    SECTION("outer.screen = off: kept") {
        for (float& x : islands[2].v) x *= 1e6f;
        const MomentPool::Mean mean = pooled(every_round("off"), islands);
        CHECK(mean.islands == std::vector<uint32_t>{0, 1, 2, 3});
        CHECK(mean.left_out.empty());
    }
}
