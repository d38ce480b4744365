// core/inner_loop.cpp: the names of the inner optimizers (run.toml's inner.optimizer), and the bound
// on how far one of their steps can move θ. InnerLoop itself is an interface: core/trainer.cpp and
// core/island.cpp implement it.
#include "core/inner_loop.h"

#include <algorithm>
#include <cmath>

namespace arch {

const EnumNames<InnerOptimizer>& inner_optimizer_names() {
    static const EnumNames<InnerOptimizer> names{{"adamw", InnerOptimizer::adamw}, {"muon", InnerOptimizer::muon}};
    return names;
}

namespace {

double adamw_step_bound(const AdamWConfig& a) {
    const double b1 = a.beta1, b2 = a.beta2, r = b1 * b1 / b2;
    if (!(b1 >= 0 && b1 < 1 && b2 > 0 && b2 < 1 && r < 1)) return 0;
    // The bias-corrected ratio's bound at step t, the largest over t: it settles long before 10^5 steps
    // (every power below is under 1 and falls geometrically).
    double most = 0, sum = 0, r_t = 1, b1_t = 1, b2_t = 1;
    for (int t = 1; t <= 100000; ++t) {
        sum += r_t;  // Σ_{j<t} r^j
        r_t *= r;
        b1_t *= b1;
        b2_t *= b2;
        most = std::max(most, (1 - b1) / std::sqrt(1 - b2) * std::sqrt(sum) * std::sqrt(1 - b2_t) / (1 - b1_t));
    }
    return most;
}

double muon_step_bound(const MuonConfig& m) {
    float sigma_max = 0;  // what Newton-Schulz makes of a singular value in (0, 1] of g / ‖g‖_F
    for (int k = 1; k <= 10000; ++k) sigma_max = std::max(sigma_max, std::fabs(newton_schulz_scalar(k / 10000.0f, m.ns_steps)));
    return 0.2 * sigma_max;
}

}  // namespace

double inner_step_value_bound(const TrainConfig& config, int widest) {
    const double adamw = adamw_step_bound(config.adamw);
    if (adamw == 0) return 0;
    return config.optimizer == InnerOptimizer::muon
               ? std::max(adamw, muon_step_bound(config.muon) * std::sqrt(static_cast<double>(std::max(widest, 1))))
               : adamw;
}

double adamw_moment_ratio_bound(const AdamWConfig& a) {
    const double b1 = a.beta1, b2 = a.beta2, r = b1 * b1 / b2;
    if (!(b1 >= 0 && b1 < 1 && b2 > 0 && b2 < 1 && r < 1)) return 0;
    return (1 - b1) / std::sqrt((1 - b2) * (1 - r));
}

double inner_step_rms_bound(const TrainConfig& config) {
    const double adamw = adamw_step_bound(config.adamw);
    if (adamw == 0) return 0;
    return config.optimizer == InnerOptimizer::muon ? std::max(adamw, muon_step_bound(config.muon)) : adamw;
}

}  // namespace arch
