// peers/rounds/auto_steps.h: H from the link (issue 29): the fewest inner steps a round needs for an
// island to be busy a target share of its time, given its step time and how long a sync takes (its Δ
// up, the host's work, the update down). Pure rules: the host's round policies use them for
// inner.steps_per_round = "auto" (choose_steps, with the reason the round table shows), and
// bench_convergence's -auto rows. docs/rounds.md, "Overlapped rounds and H from the link".
//
// Overlapped rounds: the sync of round t runs while round t + 1 trains, and only the next send waits
// for it, so a round takes max(H · step, sync) and the island is busy H · step / max(H · step, sync).
// Rounds that wait: a round takes H · step + sync, busy H · step / (H · step + sync).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

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

// A round's H and why (the host's round table, archipelago status, /api/status, /metrics, the app).
struct ChosenSteps {
    uint32_t steps = 0;
    std::string why;
};

// H for the next round from what the host measured: step_s, the step time of the island the rounds
// wait for; sync_s, the last sync (0: none measured yet, and the round takes the least H, so the first
// sync is measured soon). Overlapped, an island trains all of a round's steps but one behind the last
// sync (the last needs the update merged), so H is one more than the rule's.
inline ChosenSteps choose_steps(const AutoSteps& a, double step_s, double sync_s, bool overlapped) {
    ChosenSteps c;
    char why[192];
    if (!(step_s > 0) || !(sync_s > 0) || !std::isfinite(step_s) || !std::isfinite(sync_s)) {
        c.steps = std::max<uint32_t>(a.min_steps, 1);
        std::snprintf(why, sizeof(why), "auto: %s not measured yet, so the least H", step_s > 0 ? "a sync" : "a step");
    } else {
        AutoSteps behind = a;  // overlapped: the steps behind the sync, within the bounds less one
        if (overlapped) {
            behind.min_steps = std::max<uint32_t>(a.min_steps, 2) - 1;
            behind.max_steps = std::max<uint32_t>(a.max_steps, 2) - 1;
        }
        c.steps = auto_steps_per_round(behind, step_s, sync_s, overlapped) + (overlapped ? 1 : 0);
        const bool bound = c.steps == a.min_steps || c.steps == a.max_steps;
        std::snprintf(why, sizeof(why), "auto: a sync %.2f s, a step %.3f s; %.0f%% busy %s%s", sync_s, step_s, 100 * a.target,
                      overlapped ? "overlapped" : "waiting", bound ? (c.steps == a.max_steps ? ", at the most H" : ", at the least H") : "");
    }
    c.why = why;
    return c;
}

// The share of its time an island is busy with rounds of H steps.
inline double busy_share(uint32_t H, double step_s, double sync_s, bool overlapped) {
    const double compute = H * step_s, sync = std::max(0.0, sync_s);
    if (!(compute > 0)) return 0;
    return overlapped ? compute / std::max(compute, sync) : compute / (compute + sync);
}

}  // namespace arch::rounds
