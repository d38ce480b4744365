// tests/peers/test_streaming_fragments.cpp: Streaming DiLoCo's fragments and the per-fragment global
// model. Fragments cover every parameter exactly once and are about equal; each is due once every H
// steps at its own offset; a fragment's update moves only that fragment, exactly as a Nesterov step
// on the gathered floats would; the state of all fragments survives a save and load, and a damaged
// one changes nothing; a replica, with no optimizer, follows the host's updates from its state. Also the outer lr schedule (warmup, cosine decay) as GlobalModel applies it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "compression/codec.h"
#include "core/error.h"
#include "core/model_config.h"
#include "core/param_layout.h"
#include "outer_optimizer/outer_optimizer.h"
#include "peers/diloco/fragments.h"
#include "peers/diloco/global_model.h"

using namespace arch;
using namespace arch::diloco;

namespace {
std::vector<float> ramp(std::size_t n, float scale) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((i * 7919) % 101) / 101.0f - scale / 2;
    return v;
}

// One round of the host with this one pseudo-gradient: the outer step, then its change applied.
void outer_round(GlobalModel& global, const std::vector<float>& delta, int fragment = 0) {
    const outer::WeightedDelta one{delta, 1.0};
    global.apply_update(global.make_update(std::span(&one, 1), fragment), fragment);
}
}  // namespace

TEST_CASE("fragments cover the tiny model once, strided over blocks, about equal in size") {
    const ParamLayout layout(model_preset("tiny", 4096));
    for (int P : {1, 2, 4}) {
        const auto fragments = make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), P);
        REQUIRE(fragments.size() == static_cast<std::size_t>(P));
        std::vector<int> seen(layout.num_params(), 0);
        std::size_t smallest = layout.num_params(), largest = 0;
        for (const Fragment& f : fragments) {
            std::size_t size = 0;
            for (const auto& [b, e] : f.ranges) {
                for (std::size_t i = b; i < e; ++i) ++seen[i];
                size += e - b;
            }
            CHECK(size == f.size);
            smallest = std::min(smallest, f.size);
            largest = std::max(largest, f.size);
        }
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(seen.size()));
        CHECK(largest - smallest <= 1);  // equal blocks per fragment; the tail split to the float
    }
    // Strided: with 2 fragments, fragment 0 holds blocks 0 and 2.
    const auto two = make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), 2);
    CHECK(two[0].ranges[0] == std::make_pair(std::size_t{0}, layout.block_size()));
    CHECK(two[0].ranges[1].first == 2 * layout.block_size());
    CHECK_THROWS_AS(make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), 5), Error);
    CHECK_THROWS_AS(make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), 0), Error);
}

TEST_CASE("each fragment is due once every H steps, staggered, the last at the end of each H") {
    const int H = 50, P = 4;
    for (int p = 0; p < P; ++p) {
        std::vector<int> due;
        for (int s = 1; s <= 3 * H; ++s)
            if (fragment_due(s, p, H, P)) due.push_back(s);
        REQUIRE(due.size() == 3);
        CHECK(due[1] - due[0] == H);
        CHECK(due[2] - due[1] == H);
        CHECK(due[0] == (p + 1) * H / P);
    }
    CHECK(fragment_due(50, 3, H, P));
    CHECK_FALSE(fragment_due(0, 3, H, P));
}

TEST_CASE("a fragment's update moves only that fragment, as Nesterov on its gathered floats") {
    const std::size_t blocks = 4, block = 10, n = 52;  // tail of 12
    const auto fragments = make_fragments(blocks, block, n, 4);
    OuterConfig config;
    const std::vector<float> theta0 = ramp(n, 1.0f);
    GlobalModel global(theta0, config, fragments);
    const auto codec = compression::make_codec("fp32");
    const std::string hash1 = global.fragment_hash(1);
    const std::vector<float> delta = ramp(fragments[2].size, 0.1f);
    outer_round(global, delta, 2);
    outer_round(global, delta, 2);

    std::vector<float> expect(fragments[2].size);
    gather(fragments[2], theta0, expect);
    outer::Nesterov reference(expect.size(), {config.lr, config.momentum});
    reference.step(expect, delta);
    reference.step(expect, delta);
    std::vector<float> got(fragments[2].size);
    global.fragment_theta(2, got);
    CHECK(got == expect);  // bit for bit
    CHECK(global.fragment_hash(1) == hash1);
    CHECK(global.updates_applied(2) == 2);
    CHECK(global.updates_applied(0) == 0);
    CHECK(global.updates_applied() == 2);
    // A whole-model update cannot go to a fragment.
    CHECK_THROWS_AS(global.apply_update(codec->encode(std::vector<float>(n, 0.0f), 0), 2), Error);

    // Save and load: every fragment's momentum comes back; a truncated state changes nothing.
    const std::vector<std::byte> state = global.save_state();
    GlobalModel other(std::vector<float>(n, 0.0f), config, fragments);
    other.load_state(state);
    CHECK(other.hash() == global.hash());
    CHECK(other.updates_applied(2) == 2);
    outer_round(other, delta, 2);
    outer_round(global, delta, 2);
    CHECK(other.hash() == global.hash());  // the momentum came back too
    const std::string before = other.hash();
    CHECK_THROWS_AS(other.load_state(std::span(state).first(state.size() - 3)), Error);
    CHECK(other.hash() == before);

    // A replica takes the host's updates with no optimizer of its own, and its state is θ and the counts.
    GlobalModel replica(std::vector<float>(n, 0.0f), config, fragments, GlobalModel::Holder::replica);
    std::vector<std::byte> replica_state(global.replica_state_bytes());
    global.save_replica_state(replica_state);
    replica.load_replica_state(replica_state);
    CHECK(replica.hash() == global.hash());
    CHECK(replica.updates_applied(2) == 3);
    const outer::WeightedDelta one{delta, 1.0};
    const std::vector<std::byte> update = global.make_update(std::span(&one, 1), 2);
    global.apply_update(update, 2);
    replica.apply_update(update, 2);
    CHECK(replica.hash() == global.hash());
    CHECK_THROWS_WITH(replica.make_update(std::span(&one, 1), 2), Catch::Contains("only the host"));
    CHECK_THROWS_AS(replica.save_state(), Error);
    CHECK_THROWS_AS(replica.load_replica_state(std::span(replica_state).first(replica_state.size() - 8)), Error);
    // Fragments must cover θ exactly once.
    auto overlapping = fragments;
    overlapping[0].ranges.push_back(fragments[1].ranges[0]);
    CHECK_THROWS_AS(GlobalModel(theta0, config, overlapping), Error);
}

TEST_CASE("the outer lr warms up, then follows a cosine to its final value, in every island alike") {
    const outer::OuterLrSchedule s{1.0f, 0.65f, 2, 10};
    CHECK(outer::outer_lr_at(s, 0) == Approx(0.5));   // warmup: (t + 1) / 2 of the cosine's value
    CHECK(outer::outer_lr_at(s, 1) == Approx(std::cos(3.14159265 / 9) * 0.175 + 0.825));
    CHECK(outer::outer_lr_at(s, 9) == Approx(0.65));
    CHECK(outer::outer_lr_at(s, 20) == Approx(0.65));  // past the end: the final value
    CHECK(outer::outer_lr_at({0.7f, -1.0f, 0, 0}, 5) == Approx(0.7));  // no schedule: constant

    OuterConfig config;
    config.lr = 1.0f;
    config.final_lr = 0.65f;
    config.lr_warmup = 2;
    config.total_updates = 10;
    GlobalModel global(std::vector<float>(8, 1.0f), config);
    const std::vector<float> delta(8, 0.25f);
    std::vector<float> expect(8, 1.0f);
    outer::Nesterov reference(8, {1.0f, config.momentum});
    for (int t = 0; t < 3; ++t) {
        CHECK(global.next_lr() == outer::outer_lr_at(s, static_cast<uint64_t>(t)));
        reference.set_lr(outer::outer_lr_at(s, static_cast<uint64_t>(t)));
        reference.step(expect, delta);
        outer_round(global, delta);
    }
    CHECK(std::vector<float>(global.theta().begin(), global.theta().end()) == expect);
}
