// peers/diloco/overlap_island.h: an island's side of overlapped rounds (run.mode = "overlap"; the
// host's side: peers/rounds/overlap_policy.h). An island sends round t's Δ and goes straight on with
// round t + 1's steps, from θ_t + s × (θ_i − θ_t): its own progress, scaled by s = overlap.proxy_scale,
// stands in for the update it has not received.
// When update t lands (θ's replica is then θ_{t+1}) it is merged at once, carrying the steps trained
// since the send onto it: θ_i ← θ_{t+1} + (θ_i − s_i), s_i that scaled start. The next Δ, θ_{t+1} − θ_i, is then
// the island's progress since its last send, taken against the θ the host holds, so the host's outer
// step is a sync round's. The island waits only when round t + 1's steps are all done but one and update
// t has not landed (the send of round t + 1 needs it). Round t + 1's H is not known before its
// round_start (H from the link may change it): the island overlaps as if it were round t's, at most all
// of those steps but one, spread the same way over the schedule, and round t + 1 trains what is left of
// its own H, at least one step. docs/rounds.md, "Overlapped rounds".
#pragma once

#include <vector>

#include "peers/diloco/round_island.h"

namespace arch::diloco {

class OverlapIsland final : public RoundIsland {
public:
    // proxy_scale (overlap.proxy_scale): at each send, θ_i ← θ + proxy_scale × (θ_i − θ), θ the replica the
    // Δ was taken against: the island's own progress, scaled, stands in for the update until it lands.
    OverlapIsland(IslandWorker& worker, float proxy_scale) : worker_(worker), proxy_scale_(proxy_scale) {}

    void restart() override;
    // Trains what is left of plan.steps from where θ_i is, spread over the rest of plan.schedule (from θ
    // when θ_i is out of step with the round: the first round, after a resync, a round started again),
    // sends Δ = θ − θ_i with error feedback named by plan.round; then, with overlap, the next round's
    // first steps are due.
    RoundResult run_round(const GlobalModel& replica, const RoundPlan& plan, int fragment, bool overlap,
                          const std::function<void(const StepStats&)>& on_step) override;
    bool overlapping() const override { return overlap_left_ > 0; }
    RoundResult overlap_step() override;
    void updated(int fragment) override;             // a merge is due at once
    void next_round_known() override { overlap_left_ = 0; }  // the host's next round_start came: the overlap ends
    bool merge_due() const override { return merge_due_; }
    Merged merge(const GlobalModel& replica) override;
    bool busy() const override { return overlapping() || merge_due_; }

private:
    IslandWorker& worker_;
    float proxy_scale_ = 1;
    bool fresh_ = true;          // θ_i is to start from θ at the next round
    double position_ = 0;        // the schedule position of θ_i's next step
    double stride_ = 1;          // positions per step while overlapping (the last round's span over its H)
    int done_ = 0;               // steps of the next round trained while overlapping
    bool sent_valid_ = false;    // sent_ holds θ_i at the last send, not merged yet
    std::vector<float> sent_, scratch_;
    int overlap_left_ = 0, overlapped_ = 0;
    bool merge_due_ = false;
};

}  // namespace arch::diloco
