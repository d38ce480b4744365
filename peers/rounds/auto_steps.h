// peers/rounds/auto_steps.h: H from the link (issue 29): the fewest inner steps a round needs for an
// island to be busy a target share of its time, given its step time and how long a sync takes (its Δ
// up, the host's work, the update down). A pure rule: bench_convergence's -auto rows use it; the
// daemons do not choose H from the link yet. docs/rounds.md, "Overlapped rounds and H from the link".
//
// Overlapped rounds: the sync of round t runs while round t + 1 trains, and only the next send waits
// for it, so a round takes max(H · step, sync) and the island is busy H · step / max(H · step, sync).
// Rounds that wait: a round takes H · step + sync, busy H · step / (H · step + sync).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace arch::rounds {

struct AutoSteps {
    double target = 0.95;  // the island's busy share to reach, in (0, 1)
    uint32_t min_steps = 10, max_steps = 1000;
};

// The H that reaches a.target, within [a.min_steps, a.max_steps]; a.max_steps when the step time is
// not known, min_steps when the sync takes no time.
inline uint32_t auto_steps_per_round(const AutoSteps& a, double step_s, double sync_s, bool overlapped) {
    const double lo = std::max<uint32_t>(a.min_steps, 1), hi = std::max<double>(lo, a.max_steps);
    if (!(step_s > 0) || !std::isfinite(step_s) || !std::isfinite(sync_s)) return static_cast<uint32_t>(hi);
    const double target = std::clamp(a.target, 0.0, 0.999);
    const double sync_steps = std::max(0.0, sync_s) / step_s;
    const double needed = overlapped ? target * sync_steps : target / (1 - target) * sync_steps;
    // The epsilon keeps an exact ratio (computed as 9.0000001) from costing a step.
    return static_cast<uint32_t>(std::clamp(std::ceil(needed - 1e-9), lo, hi));
}

// The share of its time an island is busy with rounds of H steps.
inline double busy_share(uint32_t H, double step_s, double sync_s, bool overlapped) {
    const double compute = H * step_s, sync = std::max(0.0, sync_s);
    if (!(compute > 0)) return 0;
    return overlapped ? compute / std::max(compute, sync) : compute / (compute + sync);
}

}  // namespace arch::rounds
