// peers/rounds/overlap_policy.h: overlapped rounds (run.mode = "overlap"), the host's side. The host
// runs them as sync rounds: round t starts every island in sync from θ_t with H steps, waits for their
// Δs (round_timeout_s, longer while one still moves) and makes one update, θ_{t+1}; a late Δ is
// dropped, or folded into the next update. What differs is the island (peers/diloco/overlap_island.h):
// it does not wait for round t + 1's round_start to train it. It sends Δ_t and trains on at once, merges
// update t when it lands, θ_i ← θ_{t+1} + (its steps since the send), and its Δ_{t+1} = θ_{t+1} − θ_i
// is then that round's progress against θ_{t+1}. Host and islands hold θ_t's replica alike after every
// update, and the θ hash checks it as in sync mode (docs/rounds.md, "Overlapped rounds").
#pragma once

#include "peers/rounds/sync_policy.h"

namespace arch::rounds {

class OverlapPolicy final : public SyncPolicy {
public:
    using SyncPolicy::SyncPolicy;

private:
    bool overlapped() const override { return true; }  // H from the link hides a sync behind H − 1 steps
};

}  // namespace arch::rounds
