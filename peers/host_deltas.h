// peers/host_deltas.h: the islands' pseudo-gradients on the host, from arrival to the aggregator.
// Each is taken in decoded into a buffer a past round used (no fresh memory for the kernel to clear),
// or, in sync rounds whose aggregator works coordinate by coordinate, held encoded and aggregated slice
// by slice later; its norm is taken in that same pass, and only a Δ the screen then clips or rejects
// costs a second pass. Before the outer step they are vetted: screened against the
// round's median norm and the honest ceiling (outer.screen: clipped or rejected, logged by island),
// each value bounded by the most one value can move in a round (clamped), or with differential
// privacy on clipped, and in central mode noised by the host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/model_config.h"
#include "outer_optimizer/screening.h"
#include "peers/diloco/global_model.h"
#include "peers/rounds/round_policy.h"
#include "peers/run_config.h"
#include "peers/run_events.h"
#include "privacy/gaussian_mechanism.h"
#include "privacy/privacy_budget.h"

namespace arch {

class HostDeltas {
public:
    // `privacy`: the run's budget when [privacy] is on (it sets the noise), else null. Both outlive this.
    HostDeltas(const RunConfig& config, const ModelConfig& model, const diloco::GlobalModel& global,
               const privacy::PrivacyBudget* privacy, std::function<void(const std::string&)> log,
               std::function<void(const RunEvent&)> event);

    // The payload of a pseudo-gradient of `values` values (its size already checked) into c: decoded,
    // or held encoded (validated whole, with the per-value bound it will be clamped to). Throws
    // arch::Error for a payload that does not decode.
    void take_in(std::span<const std::byte> payload, std::size_t values, rounds::Contribution& c);
    // Screens `all` (round `round`'s), or with privacy on clips and noises it. Empty: the update may go
    // on; else why the round starts again (": every pseudo-gradient was rejected", ...). Held Δs are
    // screened later, on what the aggregation pass saw of them (judge_held).
    std::string vet(std::vector<rounds::Contribution>& all, uint64_t round);
    // Held Δs (all of `all`), judged on their norms and clamps as the aggregation pass saw them (`seen`,
    // in the same order; GlobalModel::aggregate_held): the screen's verdicts logged, a clipped Δ given
    // its scale, a rejected one taken out. True when a Δ was clipped or rejected: the aggregate taken
    // with them all as they came is not the round's, and must be taken again for what is left.
    bool judge_held(std::vector<rounds::Contribution>& all, std::span<const diloco::GlobalModel::Seen> seen, uint64_t round);
    // A Δ's weight in the mean: its tokens, or the same for every island under DP-FedAvg.
    double weight(const rounds::Contribution& c) const { return privacy_ ? 1.0 : c.tokens; }
    void recycle(std::vector<rounds::Contribution>& all);  // the decoded buffers, back for the next round
    // The screen's norm history, kept in the checkpoint so that a restarted host has a reference.
    std::vector<double> screen_history() const { return screen_.history(); }
    void restore_screen_history(std::span<const double> norms) { screen_.restore(norms); }

private:
    bool holds_encoded() const;
    // The norm of its values times scale (a clipped Δ's, for the screen's history).
    double held_norm(const compression::HeldPayload& held, float scale);
    void screen(std::vector<rounds::Contribution>& all, uint64_t round);
    // Logs each verdict that is not "kept" and each clamp, and keeps the Δs not rejected.
    void keep_judged(std::vector<rounds::Contribution>& all, std::span<const outer::ScreenVerdict> verdicts, uint64_t round);
    // The largest norm an honest island's Δ of `values` values can have: H inner steps at the peak
    // learning rate, each moving θ by at most the optimizer's bound, plus weight decay's pull on θ,
    // twice over (error feedback's residual rides along). 0: none (an optimizer with no bound). θ's
    // norm (a pass over θ) is only taken when a Δ of `longest` norm could be above the rest of it.
    double honest_ceiling(std::size_t values, double longest) const;
    // The most one value of an honest island's Δ can be: H inner steps at the peak learning rate, each
    // moving a value by at most the optimizer's per-value bound, plus weight decay's pull on the largest
    // |θ| value, twice over (error feedback's residual and the codec's rounding ride along). Taken once
    // per θ (a pass over it). 0: none (outer.screen off, differential privacy on, no bound, or an uplink
    // whose error feedback carries values over rounds: topk or sign with +ef).
    float value_limit();
    bool privatize(std::vector<rounds::Contribution>& all, uint64_t round);  // false: too few to carry the noise

    const RunConfig& config_;
    const diloco::GlobalModel& global_;
    const privacy::PrivacyBudget* privacy_;
    std::function<void(const std::string&)> log_;
    std::function<void(const RunEvent&)> event_;  // screened: a Δ clipped or left out
    outer::NormScreen screen_;                    // outer.screen: Δ norms against the round's median
    double step_rms_;                             // inner_step_rms_bound of the islands' optimizer
    double step_value_;                           // inner_step_value_bound of the same (0: not bounded)
    float limit_ = 0.0f;                          // value_limit() for θ after `limit_at_` updates
    uint64_t limit_at_ = UINT64_MAX;
    std::unique_ptr<privacy::NoiseSource> noise_;  // central mode: the host's noise
    std::vector<std::vector<float>> spare_;        // decoded Δs' buffers (at most one a run's island)
    std::vector<std::vector<std::byte>> spare_payloads_;  // held Δs' payload buffers, the same
    std::vector<std::byte> decode_scratch_;        // a payload, out of its zstd stage
    std::vector<float> norm_slice_;                // a slice of a held Δ, decoded for its norm
};

}  // namespace arch
