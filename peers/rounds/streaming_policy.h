// peers/rounds/streaming_policy.h: Streaming DiLoCo rounds (run.mode = "streaming", arXiv 2501.18512).
// The model is in P fragments (peers/diloco/fragments.h); a round is one fragment's sync, so the host
// makes run.rounds × P updates. Round r syncs fragment r mod P and covers the inner steps between two
// sends: in each cycle of H steps fragment k is sent after step (k + 1) H / P (fragment_due's rule).
// An island trains on through the rounds without going back to θ; the τ steps it trains while a
// fragment travels count toward the next round (peers/diloco/streaming_island.h). Otherwise a round
// goes as a sync one: every island in sync, a deadline, one update of what arrived (late Δs dropped).
#pragma once

#include "peers/rounds/sync_policy.h"

namespace arch::rounds {

// The span of the run's inner schedule (rounds / P cycles of H steps) that round `round` covers.
ScheduleSpan streaming_span(uint64_t round, uint32_t fragments, uint32_t H);

class StreamingPolicy final : public SyncPolicy {
public:
    StreamingPolicy(uint32_t steps_per_round, uint32_t fragments, double round_timeout_s, Notes notes);
    ChosenSteps round_steps() const override { return {H_ / P_, "inner.steps_per_round / streaming.fragments"}; }

private:
    Start start(const RunSnapshot& run, const std::string& key) const override;

    uint32_t H_, P_;
};

}  // namespace arch::rounds
