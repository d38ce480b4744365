// tests/peers/test_streaming_island.cpp: an island's side of Streaming DiLoCo, driven by hand. After
// its τ overlapped steps it merges the updated fragment by the rule the run names: mix (α θ_i + (1 − α) θ)
// or carry (θ plus the island's progress since its send, which the next Δ then holds); the fragment
// it did not send is left alone, and under carry an update of a fragment it did not send replaces it.
#include <catch2/catch.hpp>

#include "compression/codec.h"
#include "peers/diloco/fragments.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/streaming_island.h"
#include "tests/peers/tiny_island.h"

using namespace arch;
using arch::test::same_bits;
using namespace arch::diloco;

namespace {

std::vector<float> fragment_of(const Fragment& f, std::span<const float> full) {
    std::vector<float> out(f.size);
    gather(f, full, out);
    return out;
}

std::vector<float> params(IslandWorker& w) {
    std::vector<float> out(w.num_params());
    w.get_params(out);
    return out;
}

// One island alone: a round of fragment 0, its update from the host, τ = 2 overlapped steps, the merge.
// Returns θ_i,0 at the send, θ_i just before the merge, and θ_i after it, with the replica updated.
struct Seen {
    std::vector<float> sent, before, after;
};
Seen one_round(IslandWorker& w, GlobalModel& replica, StreamingMerge rule) {
    StreamingIsland island(w, 2, 0.25f, rule);
    const RoundResult r = island.run_round(replica, RoundPlan{0, 4, rounds::ScheduleSpan{0, 4}}, 0, true);
    Seen m;
    m.sent = fragment_of(replica.fragment(0), params(w));
    const std::vector<float> delta = compression::decode(r.payload, replica.fragment(0).size);
    const outer::WeightedDelta c{delta, r.tokens};
    replica.apply_update(replica.make_update({&c, 1}, 0), 0);
    island.updated(0);
    CHECK_FALSE(island.merge_due());  // not before the τ steps
    island.overlap_step();
    island.overlap_step();
    REQUIRE(island.merge_due());
    m.before = params(w);
    const Merged merged = island.merge(replica);
    CHECK(island.merged_last() == std::vector<int>{0});
    CHECK(merged.overlapped == 2);
    m.after = params(w);
    return m;
}

}  // namespace

TEST_CASE("streaming island: mix and carry merge the updated fragment, and only it") {
    test::TinyIsland tiny;
    const ParamLayout layout(tiny.model);
    const auto fragments = make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), 2);
    for (const StreamingMerge rule : {StreamingMerge::mix, StreamingMerge::carry}) {
        INFO((rule == StreamingMerge::mix ? "mix" : "carry"));
        IslandWorker w(tiny.model, tiny.train, "fp32");
        GlobalModel replica(tiny.theta(), OuterConfig{.lr = 0.7f, .momentum = 0.5f}, fragments);
        const Seen m = one_round(w, replica, rule);
        const Fragment& f0 = replica.fragment(0);
        std::vector<float> global(f0.size);
        replica.fragment_theta(0, global);
        const std::vector<float> before = fragment_of(f0, m.before), after = fragment_of(f0, m.after);
        std::vector<float> want(f0.size);
        for (std::size_t k = 0; k < f0.size; ++k)
            want[k] = rule == StreamingMerge::mix ? 0.25f * before[k] + 0.75f * global[k]
                                                  : global[k] + (before[k] - m.sent[k]);
        CHECK(same_bits(after, want));
        // The τ steps moved θ_i,0: under carry that progress is on top of the update, not lost.
        CHECK_FALSE(same_bits(before, m.sent));
        // The fragment not updated is untouched by the merge.
        CHECK(same_bits(fragment_of(replica.fragment(1), m.after), fragment_of(replica.fragment(1), m.before)));
    }
}

TEST_CASE("streaming island: under carry, an update of a fragment the island did not send replaces it") {
    test::TinyIsland tiny;
    const ParamLayout layout(tiny.model);
    const auto fragments = make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), 2);
    IslandWorker w(tiny.model, tiny.train, "fp32");
    GlobalModel replica(tiny.theta(), OuterConfig{}, fragments);
    StreamingIsland island(w, 1, 0.5f, StreamingMerge::carry);
    island.run_round(replica, RoundPlan{0, 4, rounds::ScheduleSpan{0, 4}}, 0, true);
    // Another island's Δ of fragment 1 (this one did not send it) makes the update the host sends.
    const std::vector<float> other = test::noise(replica.fragment(1).size, 9, 1e-3f);
    const outer::WeightedDelta c{other, 1.0};
    replica.apply_update(replica.make_update({&c, 1}, 1), 1);
    island.updated(1);
    island.overlap_step();
    REQUIRE(island.merge_due());
    island.merge(replica);
    std::vector<float> global(replica.fragment(1).size);
    replica.fragment_theta(1, global);
    CHECK(same_bits(fragment_of(replica.fragment(1), params(w)), global));
    CHECK_THROWS_WITH(parse_streaming_merge("blend"), "unknown streaming merge 'blend' (mix or carry)");
}
