// peers/diloco/streaming_island.cpp: StreamingIsland.
#include "peers/diloco/streaming_island.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace arch::diloco {

StreamingIsland::StreamingIsland(IslandWorker& worker, int tau, float alpha, StreamingMerge rule)
    : worker_(worker), tau_(tau), alpha_(alpha), rule_(rule), full_(worker.num_params()) {}

void StreamingIsland::restart() {
    fresh_ = true;
    sent_fragment_ = -1;
    overlap_left_ = overlapped_ = 0;
    merges_.clear();
}

RoundResult StreamingIsland::run_round(const GlobalModel& replica, const RoundPlan& plan, int fragment, bool overlap,
                                       const std::function<void(const StepStats&)>& on_step) {
    if (busy()) throw Error("a streaming round started while the last one's update is not merged");
    if (!plan.schedule || plan.schedule->to <= plan.schedule->from) throw Error("a streaming round of no steps");
    const rounds::ScheduleSpan span = *plan.schedule;
    // Out of step (the first round, a round started again after its send): θ_i starts from θ.
    if (fresh_ || position_ < span.from || position_ >= span.to) {
        worker_.set_params(replica.theta());
        position_ = span.from;
        fresh_ = false;
    }
    const int steps = static_cast<int>(span.to - position_);
    RoundResult r = worker_.run_steps(steps, rounds::ScheduleSpan{position_, span.to}, on_step);
    position_ = span.to;
    r.tokens *= static_cast<double>(span.to - span.from) / steps;  // the τ steps before are the round's too

    const Fragment& f = replica.fragment(fragment);
    mine_.resize(f.size);
    global_.resize(f.size);
    worker_.get_params(full_);
    gather(f, full_, mine_);
    replica.fragment_theta(fragment, global_);
    if (rule_ == StreamingMerge::carry) {
        sent_ = mine_;
        sent_fragment_ = fragment;
    }
    for (std::size_t k = 0; k < f.size; ++k) mine_[k] = global_[k] - mine_[k];
    r.payload = worker_.encode(mine_, static_cast<uint64_t>(fragment));
    overlap_left_ = overlap ? tau_ : 0;
    overlapped_ = 0;
    return r;
}

RoundResult StreamingIsland::overlap_step() {
    if (!overlapping()) throw Error("no overlap step is due");
    RoundResult r = worker_.run_steps(1, rounds::ScheduleSpan{position_, position_ + 1});
    ++position_;
    --overlap_left_;
    ++overlapped_;
    return r;
}

Merged StreamingIsland::merge(const GlobalModel& replica) {
    if (!merge_due()) throw Error("no merge is due");
    worker_.get_params(full_);
    for (const int fragment : merges_) {
        const Fragment& f = replica.fragment(fragment);
        mine_.resize(f.size);
        global_.resize(f.size);
        gather(f, full_, mine_);
        replica.fragment_theta(fragment, global_);
        const bool sent_it = fragment == sent_fragment_;
        merge_fragment(rule_, alpha_, mine_, global_, sent_it ? std::span<const float>(sent_) : std::span<const float>());
        if (sent_it) sent_fragment_ = -1;
        scatter(f, mine_, full_);
    }
    worker_.set_params(full_);
    merged_last_ = std::exchange(merges_, {});
    std::string what = "fragment";
    for (std::size_t i = 0; i < merged_last_.size(); ++i) what += (i ? ", " : " ") + std::to_string(merged_last_[i]);
    what += rule_ == StreamingMerge::mix ? " (mix, alpha " + std::to_string(alpha_) + ")" : " (carry)";
    return {what, std::exchange(overlapped_, 0)};
}

}  // namespace arch::diloco
