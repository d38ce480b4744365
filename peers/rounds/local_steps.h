// peers/rounds/local_steps.h: how many inner steps an island runs in a round, and where those steps
// sit in the run's inner learning-rate schedule: pure rules, shared by the host's round policies,
// the island (peers/diloco/island_worker.cpp) and bench_convergence. docs/rounds.md.
// Dynamic Local Updates (Liu et al., arXiv 2401.09135): H_i = floor(H · v_i / max_j v_j), at least 1.
// The schedule runs over run.rounds × H positions; a round's steps are spread evenly over the
// positions the round covers, so an island that runs H/4 steps a round still ends its cosine at the
// end of the run.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/adamw.h"

namespace arch::rounds {

// Dynamic Local Updates. steps_per_s: this island's speed, fastest: the fastest island's now, both
// measured by the host (0: not measured yet, and then the island runs the full H).
inline uint32_t local_steps(uint32_t H, double steps_per_s, double fastest) {
    if (!(steps_per_s > 0) || !(fastest > 0) || !std::isfinite(steps_per_s) || !std::isfinite(fastest)) return H;
    // The epsilon keeps an exact ratio (H/2 of 0.5 / 1.0 computed as 24.999...) from losing a step.
    const double h = std::floor(static_cast<double>(H) * std::min(1.0, steps_per_s / fastest) + 1e-9);
    return static_cast<uint32_t>(std::clamp(h, 1.0, static_cast<double>(H)));
}

// The positions [from, to) of the run's schedule (run.rounds × H long) that one round of an island
// covers: it starts at update `round` and its Δ is expected in the update `updates` later (sync: 1;
// async: one update per island in the run, as Dynamic Local Updates make them finish together).
struct ScheduleSpan {
    uint64_t from = 0, to = 0;
};
inline ScheduleSpan schedule_span(uint64_t round, uint64_t updates, uint64_t rounds, uint32_t H) {
    const uint64_t end = std::min(rounds, round + std::max<uint64_t>(updates, 1));
    const uint64_t start = std::min(round, rounds);
    return {start * H, end * H};
}

// The position of step k of the n steps a round runs over that span: spread evenly, the first at from.
inline uint64_t schedule_position(const ScheduleSpan& span, uint32_t k, uint32_t n) {
    if (n == 0 || span.to <= span.from) return span.from;
    return span.from + (span.to - span.from) * k / n;
}

// The learning rate of an island's next step: the run's schedule at the step's position, but never
// above the warmup ramp of the island's own steps (an island that joins late, with fresh AdamW
// moments, warms up too). For an island that ran every round with the full H this is exactly
// schedule.at(its own step count).
inline float placed_lr(const LrSchedule& schedule, uint64_t position, int own_steps_done) {
    const int at = static_cast<int>(std::min<uint64_t>(position, static_cast<uint64_t>(std::max(schedule.total_steps, 0))));
    const float lr = schedule.at(at);
    if (schedule.warmup_steps <= 0 || own_steps_done >= schedule.warmup_steps) return lr;
    const float ramp = schedule.max_lr * static_cast<float>(own_steps_done + 1) / static_cast<float>(schedule.warmup_steps);
    return std::min(lr, ramp);
}

}  // namespace arch::rounds
