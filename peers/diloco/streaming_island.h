// peers/diloco/streaming_island.h: an island's side of Streaming DiLoCo (run.mode = "streaming";
// the host's rounds: peers/rounds/streaming_policy.h). θ_i trains on across rounds and goes back to
// θ only after a state (or in a round it is out of step with). A round trains up to the round's end in
// the run's schedule and sends its fragment's Δ_p = θ_p − θ_i,p; then the island trains τ more steps
// (the first of the next round) while Δ_p and the update travel, and only then merges the updated
// fragment, by one of two rules (StreamingMerge): mix, θ_i,p = α θ_i,p + (1 − α) θ_p (the paper's), or
// carry, θ_i,p = θ_p + (θ_i,p − θ_i,p at the send): the update plus the τ steps' progress, which the
// next Δ then carries. The peer (peers/peer.cpp) polls its link between those τ steps, so the transfers
// move while it trains. No error feedback (run_config.cpp refuses +ef).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "peers/diloco/round_island.h"
#include "peers/diloco/streaming_merge.h"

namespace arch::diloco {

class StreamingIsland final : public RoundIsland {
public:
    StreamingIsland(IslandWorker& worker, int tau, float alpha, StreamingMerge rule = StreamingMerge::mix);

    // A state replaced θ (a resync): the next round starts θ_i from it; nothing is overlapped or merged.
    void restart() override;
    // A round: its span of the schedule (plan.schedule) and the fragment it sends. Trains from where θ_i
    // is (the τ steps overlapped since the last send count) to the span's end, then encodes the
    // fragment's Δ against the replica's θ. overlap: the τ steps follow (not after the run's last
    // round). The result's tokens are the whole round's steps', its steps and loss those trained now.
    RoundResult run_round(const GlobalModel& replica, const RoundPlan& plan, int fragment, bool overlap,
                          const std::function<void(const StepStats&)>& on_step = {}) override;
    bool overlapping() const override { return overlap_left_ > 0; }
    RoundResult overlap_step() override;                        // one of the τ steps after a send
    void updated(int fragment) override { merges_.push_back(fragment); }  // the replica took an update of this fragment
    bool merge_due() const override { return !merges_.empty() && overlap_left_ == 0; }
    // Merges the updated fragments into θ_i, in the order of their updates (merge_due() first; more than
    // one when an update of a round this island was not in came too); says which, and the steps
    // overlapped before.
    Merged merge(const GlobalModel& replica) override;
    std::vector<int> merged_last() const { return merged_last_; }  // the fragments of the last merge
    bool busy() const override { return overlapping() || !merges_.empty(); }  // a round_start waits until it is not

private:
    IslandWorker& worker_;
    int tau_;
    float alpha_;
    StreamingMerge rule_;
    int sent_fragment_ = -1;     // carry: the fragment sent last and not merged yet, and θ_i,p at its send
    std::vector<float> sent_;
    bool fresh_ = true;          // θ_i is to start from θ at the next round
    uint64_t position_ = 0;      // the schedule position of θ_i's next step
    int overlap_left_ = 0, overlapped_ = 0;
    std::vector<int> merges_;    // fragments whose updates wait for the overlap to end
    std::vector<int> merged_last_;
    std::vector<float> full_, mine_, global_;
};

}  // namespace arch::diloco
