// peers/diloco/round_island.h: the seam between the peer's event loop (peers/peer.cpp) and how its
// island trains across rounds. The peer hands each round_start to run_round and, between rounds, lets
// the island train on (overlap_step) and merge updates (merge); it knows no mode. Three islands:
// - sync and async rounds (make_round_island below): every round starts from θ, nothing overlaps;
// - streaming (streaming_island.h): θ_i trains on, τ steps after each fragment's send;
// - overlap (overlap_island.h): θ_i trains the next round while the last Δ and its update travel.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/island_worker.h"

namespace arch {
struct RunConfig;  // peers/run_config.h
}

namespace arch::diloco {

// What a merge did, for the peer's log and events.
struct Merged {
    std::string what;     // "fragment 0, 2 (carry)", "the update of round 7 (carry)"
    int overlapped = 0;   // steps trained after the send, before the merge
};

class RoundIsland {
public:
    virtual ~RoundIsland() = default;

    // A state replaced θ (a resync): the next round starts θ_i from it; nothing overlapped is merged.
    virtual void restart() {}
    // The round a round_start asks for, on θ's replica: trains, then encodes its Δ (plan.round names it
    // for error feedback's settle). fragment: the part of θ the round syncs. overlap: training on after
    // the send is allowed (not after the run's last round).
    virtual RoundResult run_round(const GlobalModel& replica, const RoundPlan& plan, int fragment, bool overlap,
                                  const std::function<void(const StepStats&)>& on_step) = 0;

    // Between rounds. overlapping: a step after the send is due (the peer polls its link between them).
    virtual bool overlapping() const { return false; }
    virtual RoundResult overlap_step() { throw Error("no overlap step is due"); }
    // The replica took an update of this fragment, or the next round_start came: both may end the overlap.
    virtual void updated(int /*fragment*/) {}
    virtual void next_round_known() {}
    // A merge of updates into θ_i is due now; merge does it.
    virtual bool merge_due() const { return false; }
    virtual Merged merge(const GlobalModel& /*replica*/) { throw Error("no merge is due"); }
    // The next round_start waits while the island is busy (overlapping, or a merge is due).
    virtual bool busy() const { return false; }
};

// The island for run.mode: StreamingIsland, OverlapIsland, or one that starts every round from θ
// (round_island.cpp, built with the peer: it reads the run's config).
std::unique_ptr<RoundIsland> make_round_island(const RunConfig& config, IslandWorker& worker);

}  // namespace arch::diloco
