// peers/diloco/overlap_island.cpp: OverlapIsland.
#include "peers/diloco/overlap_island.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace arch::diloco {

void OverlapIsland::restart() {
    fresh_ = true;
    sent_valid_ = merge_due_ = false;
    overlap_left_ = overlapped_ = 0;
}

RoundResult OverlapIsland::run_round(const GlobalModel& replica, const RoundPlan& plan, int /*fragment*/, bool overlap,
                                     const std::function<void(const StepStats&)>& on_step) {
    if (busy()) throw Error("an overlapped round started while the last one's update is not merged");
    if (!plan.schedule || plan.schedule->to <= plan.schedule->from) throw Error("an overlapped round of no steps");
    const rounds::ScheduleSpan span = *plan.schedule;
    if (fresh_ || position_ < span.from || position_ >= span.to) {  // out of step: from θ, nothing to carry
        worker_.set_params(replica.theta());
        position_ = span.from;
        fresh_ = sent_valid_ = false;
    }
    const int steps = static_cast<int>(span.to - position_);
    RoundResult r = worker_.run_steps(steps, rounds::ScheduleSpan{position_, span.to}, on_step);
    position_ = span.to;
    r.tokens *= static_cast<double>(span.to - span.from) / steps;  // the steps overlapped before are the round's too
    worker_.encode_round(replica.theta(), r, plan.round);
    overlapped_ = 0;
    // The next round's steps, at most all of them but one: its send needs this round's update first.
    overlap_left_ = overlap ? static_cast<int>(span.to - span.from) - 1 : 0;
    sent_valid_ = overlap;
    if (overlap) {
        sent_.resize(worker_.num_params());
        worker_.get_params(sent_);
    }
    return r;
}

RoundResult OverlapIsland::overlap_step() {
    if (!overlapping()) throw Error("no overlap step is due");
    RoundResult r = worker_.run_steps(1, rounds::ScheduleSpan{position_, position_ + 1});
    ++position_;
    --overlap_left_;
    ++overlapped_;
    return r;
}

void OverlapIsland::updated(int /*fragment*/) { merge_due_ = true; }

Merged OverlapIsland::merge(const GlobalModel& replica) {
    if (!merge_due_) throw Error("no merge is due");
    merge_due_ = false;
    if (!sent_valid_) {  // nothing of this island's is in flight: its next round starts from θ
        fresh_ = true;
        return {"the update (θ_i starts its next round from θ)", std::exchange(overlapped_, 0)};
    }
    const std::span<const float> theta = replica.theta();
    scratch_.resize(theta.size());
    worker_.get_params(scratch_);
    for (std::size_t k = 0; k < theta.size(); ++k) scratch_[k] = theta[k] + (scratch_[k] - sent_[k]);
    worker_.set_params(scratch_);
    // Still the steps since the last send: a second update before the next send carries them again.
    std::copy(theta.begin(), theta.end(), sent_.begin());
    return {"the update (carry)", std::exchange(overlapped_, 0)};
}

}  // namespace arch::diloco
