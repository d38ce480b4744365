// peers/rounds/sync_policy.h: synchronous DiLoCo rounds (run.mode = "sync"): a round starts every
// island that is in sync with the same H, waits for each one's pseudo-gradient up to
// round_timeout_s after it opened (longer while a Δ is still moving), and makes one update of all
// that arrived. A straggler's late Δ is dropped, or with deadlines.straggler = "fold" kept for the
// next round's update. docs/protocol.md, "A sync round"; docs/rounds.md.
#pragma once

#include <map>

#include "peers/rounds/round_policy.h"

namespace arch::rounds {

class SyncPolicy : public RoundPolicy {
public:
    SyncPolicy(uint32_t steps_per_round, double round_timeout_s, bool fold, Notes notes);
    // inner.steps_per_round = "auto": each round's H from the link, chosen as it opens (the slowest
    // island's step time, the last sync), spread over the schedule's span of steps_per_round positions.
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

protected:
    // What one island's round_start holds: H steps over the round's span of the schedule.
    virtual Start start(const RunSnapshot& run, const std::string& key) const;
    // Whether islands train the next round while the sync travels (H from the link hides it then).
    virtual bool overlapped() const { return false; }

private:
    bool complete() const;                      // every island of the round delivered
    bool deadline_passed(const RunSnapshot& run);   // round_timeout_s, and no awaited Δ still moving

    uint32_t H_;
    std::optional<AutoSteps> auto_;
    ChosenSteps chosen_;                        // the open round's H
    double round_timeout_s_;
    bool fold_;
    Notes notes_;
    bool open_ = false;
    std::map<std::string, bool> expected_;      // the round's islands: key -> delivered
    std::vector<Contribution> contributions_;   // this round's
    std::vector<Contribution> folded_;          // late ones of the round before, for this round's update
    bool deadline_logged_ = false;              // "waiting for a Δ still moving" said once a round
};

}  // namespace arch::rounds
