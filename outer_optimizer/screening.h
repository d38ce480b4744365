// outer_optimizer/screening.h: screens pseudo-gradients before aggregation, so that one island cannot
// blow up the outer step. Each Δ's L2 norm is compared with the median norm of its round, or, when the
// round has fewer than kMinForMedian of them (async, a small run), with the median of the norms kept
// in recent rounds. A Δ beyond factor × that median is clipped to it, or rejected, as the policy says.
// A ceiling (the largest norm an honest island's Δ can have, which the host derives from the inner
// optimizer: peers/host_deltas.h) bounds every Δ, and stands alone when there is no median yet; a
// per-value bound (clamp_values) keeps a Δ from spending that norm on a few values.
// Pure functions on spans: it never sees a peer or a socket; the host logs the verdicts by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "core/named_enum.h"

namespace arch::outer {

struct ScreenPolicy {
    enum class Action { off, clip, reject };
    Action action = Action::clip;
    double factor = 10.0;  // > 1: how far above the median norm a Δ may go
};

const EnumNames<ScreenPolicy::Action>& screen_action_names();  // "clip", "reject", "off" (run.toml's outer.screen)
ScreenPolicy::Action parse_screen_action(const std::string& name);  // throws arch::Error naming the choices

struct ScreenVerdict {
    enum class Outcome { kept, clipped, rejected };
    Outcome outcome = Outcome::kept;
    double norm = 0;   // the Δ's L2 norm as it arrived
    double limit = 0;  // factor × the median it was compared with, or the ceiling (0: no bound yet)
    float scale = 1;   // clipped: what each value is multiplied by
};

class NormScreen {
public:
    static constexpr std::size_t kMinForMedian = 3;
    explicit NormScreen(ScreenPolicy policy, std::size_t history = 64);

    // Screens one round's pseudo-gradients: a clipped Δ is scaled in place; a rejected one is left as it
    // was (the caller drops it). One verdict per Δ, in order. The norms of the kept and clipped Δs
    // (after clipping) join the history. ceiling > 0: no Δ may be longer (0: none).
    std::vector<ScreenVerdict> screen(std::span<const std::span<float>> deltas, double ceiling = 0);
    // The same in two steps, for Δs held encoded (a host's sync round): the verdicts from the Δs'
    // norms, in order (nothing remembered yet); then, for each Δ kept or clipped, in order, its norm
    // as aggregated (after clipping).
    std::vector<ScreenVerdict> judge(std::span<const double> norms, double ceiling = 0) const;
    void remember(double kept_norm);
    // The norms remembered, oldest first, for a checkpoint; restore() takes them back (the last
    // `history` of them, finite and positive only), so a restarted host screens against them at once.
    std::vector<double> history() const { return {history_.begin(), history_.end()}; }
    void restore(std::span<const double> norms);

private:
    ScreenPolicy policy_;
    std::size_t capacity_;
    std::deque<double> history_;
};

// The sum of squares behind l2_norm, in double (so 1e30-sized values do not overflow), in eight lanes
// by position (value i goes to lane i % 8): a sum the compiler vectorizes, where one running sum waits
// on every addition (124M values: 0.41 s that way, 0.03 s in lanes, here; the host takes a norm of
// every Δ, between a round's last Δ and its update). Each run of kRun values from position 0 is summed
// in its own lanes, which are then added to the total's lane by lane, run by run, and the lanes added
// up at the end: the same bits however the values come in slices, and runs may be summed on several
// threads (of_run) and merged in position order.
class SquareSum {
public:
    static constexpr std::uint64_t kRun = std::uint64_t{1} << 20;
    struct Lanes {
        double lane[8] = {};
    };
    void add(std::span<const float> x, float scale = 1.0f);  // the next values, each times scale (in float) first
    double total() const;
    // One run's lanes (x: a whole run, or the last one's values), summed anywhere, and merged where
    // add() would have come to that run: at a run's start (after a last, shorter run, nothing more).
    static Lanes of_run(std::span<const float> x, float scale = 1.0f);
    void merge(const Lanes& run, std::uint64_t values);

private:
    void fold(const Lanes& run);
    double done_[8] = {};  // the runs before the one under way
    Lanes run_;            // the run under way
    std::uint64_t at_ = 0;  // values added so far
};
double l2_norm(std::span<const float> x);  // sqrt(SquareSum's total of x)

// The per-value bound: each value of x brought within [-limit, limit] (a norm can be spent on a few
// values: one norm's gain vector). Returns how many were beyond it. limit <= 0: none is touched.
uint64_t clamp_values(std::span<float> x, float limit);
uint64_t count_beyond(std::span<const float> x, float limit);  // the same count, nothing touched
float largest_magnitude(std::span<const float> x);  // the largest |x_i| (NaN: left out); 0 for none

}  // namespace arch::outer
