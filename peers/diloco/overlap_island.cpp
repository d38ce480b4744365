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
    if (fresh_ || position_ < static_cast<double>(span.from) || position_ >= static_cast<double>(span.to)) {
        worker_.set_params(replica.theta());  // out of step: from θ, nothing to carry
        position_ = static_cast<double>(span.from);
        done_ = 0;
        fresh_ = sent_valid_ = false;
    }
    const int asked = static_cast<int>(plan.steps), steps = std::max(1, asked - done_);
    RoundResult r = worker_.run_steps(steps, rounds::ScheduleSpan{static_cast<uint64_t>(position_), span.to}, on_step);
    position_ = static_cast<double>(span.to);
    // The steps overlapped before are the round's too, up to its H (the host caps a round's weight there).
    r.tokens *= static_cast<double>(std::min(done_ + steps, asked)) / steps;
    worker_.encode_round(replica.theta(), r, plan.round);
    overlapped_ = done_ = 0;
    // The next round's steps, as if its H were this one's, all but one: its send needs this update first.
    overlap_left_ = overlap ? asked - 1 : 0;
    stride_ = static_cast<double>(span.to - span.from) / asked;
    sent_valid_ = overlap;
    if (overlap) {
        sent_.resize(worker_.num_params());
        worker_.get_params(sent_);
        if (proxy_scale_ != 1.0f) {  // the next round starts from θ + scale × the progress just sent
            const std::span<const float> theta = replica.theta();
            for (std::size_t k = 0; k < sent_.size(); ++k) sent_[k] = theta[k] + proxy_scale_ * (sent_[k] - theta[k]);
            worker_.set_params(sent_);
        }
    }
    return r;
}

RoundResult OverlapIsland::overlap_step() {
    if (!overlapping()) throw Error("no overlap step is due");
    const auto at = static_cast<uint64_t>(position_);
    RoundResult r = worker_.run_steps(1, rounds::ScheduleSpan{at, at + 1});
    position_ += stride_;
    --overlap_left_;
    ++overlapped_;
    ++done_;
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
