// peers/rounds/staleness.h: what an asynchronous run does with a stale pseudo-gradient: a pure rule,
// shared by the host's async round policy and bench_convergence's simulated async rows.
// Staleness s = outer updates applied between the θ an island started from and the update its Δ
// would go into. Up to max_staleness a Δ counts in full; beyond it, `downweight` scales it by
// (1 + max_staleness) / (1 + s) (with max_staleness = 0: 1 / (1 + s)), `refuse` drops it.
// docs/rounds.md, "Staleness".
#pragma once

#include <cstdint>
#include <string>

#include "core/named_enum.h"

namespace arch::rounds {

enum class StaleAction { downweight, refuse };

struct StalenessRule {
    uint64_t max_staleness = 4;
    StaleAction action = StaleAction::downweight;
};

struct StaleVerdict {
    bool refused = false;
    float scale = 1.0f;  // what the Δ is multiplied by before it goes into the update (1: in full)
};

inline StaleVerdict judge_staleness(uint64_t staleness, const StalenessRule& rule) {
    if (staleness <= rule.max_staleness) return {};
    if (rule.action == StaleAction::refuse) return {true, 0.0f};
    // One Δ per update (async): a weight in the mean would cancel out, so the Δ itself is scaled.
    return {false, static_cast<float>(static_cast<double>(rule.max_staleness + 1) / static_cast<double>(staleness + 1))};
}

// "downweight", "refuse" (run.toml's async.stale).
inline const EnumNames<StaleAction>& stale_action_names() {
    static const EnumNames<StaleAction> names{{"downweight", StaleAction::downweight}, {"refuse", StaleAction::refuse}};
    return names;
}
inline StaleAction parse_stale_action(const std::string& name) { return parse_named(stale_action_names(), name, "async.stale"); }

}  // namespace arch::rounds
