// peers/rounds/async_policy.h: asynchronous DiLoCo (run.mode = "async", Liu et al., arXiv
// 2401.09135): every island trains on its own clock; each pseudo-gradient that arrives is its own
// outer update (Delayed Nesterov, set up by run_config.cpp), and the island that sent it starts again
// at once from the new θ. Dynamic Local Updates give slower islands fewer steps (local_steps.h), and
// a Δ that is more than async.max_staleness updates old is downweighted or refused (staleness.h).
// docs/rounds.md.
#pragma once

#include <deque>

#include "peers/rounds/round_policy.h"
#include "peers/rounds/staleness.h"

namespace arch::rounds {

class AsyncPolicy final : public RoundPolicy {
public:
    AsyncPolicy(uint32_t steps_per_round, StalenessRule staleness);
    // inner.steps_per_round = "auto": H from the link for the fastest island (its step time, the last
    // sync, which an async island waits for), and Dynamic Local Updates give the others fewer.
    void steps_from_link(const AutoSteps& a) { auto_ = a; }

    bool open() const override { return open_; }
    Opening open_round(const RunSnapshot& run) override;
    std::optional<Start> on_ready(const RunSnapshot& run, const IslandView& island) override;
    void admit(const RunSnapshot& run, const IslandView& island, uint64_t round) const override;
    Arrival on_arrival(const RunSnapshot& run, Contribution contribution) override;
    bool on_gone(const std::string& key, bool revoked) override;
    bool update_due(const RunSnapshot& run) override;
    std::vector<Contribution> take_update() override;
    std::vector<Start> after_update(const RunSnapshot& run, bool applied) override;
    ChosenSteps round_steps() const override { return chosen_; }

private:
    Start start(const RunSnapshot& run, const std::string& key);

    uint32_t H_;
    std::optional<AutoSteps> auto_;
    ChosenSteps chosen_;   // H before Dynamic Local Updates, for the island started last
    StalenessRule staleness_;
    bool open_ = false;
    std::deque<Contribution> waiting_;   // arrived, not yet made into an update (one update each)
    std::vector<std::string> in_update_; // the islands of the update being made: started again after it
};

}  // namespace arch::rounds
