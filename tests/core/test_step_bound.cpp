// tests/core/test_step_bound.cpp: inner_step_rms_bound against a second implementation: Adam's two
// moving averages simulated step by step for the gradients that make |m̂|/sqrt(v̂) largest (growing by
// β2/β1 a step, Cauchy-Schwarz's equality case) and for random ones; Muon's against the real
// Newton-Schulz on random matrices, scaled as core/muon.cpp scales them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/inner_loop.h"
#include "core/muon.h"

using namespace arch;

namespace {

// |m̂_t| / sqrt(v̂_t) after gradients g[0..t), as AdamW computes them (eps 0).
double adam_ratio(const std::vector<double>& g, double b1, double b2) {
    double m = 0, v = 0, b1_t = 1, b2_t = 1;
    for (double x : g) {
        m = b1 * m + (1 - b1) * x;
        v = b2 * v + (1 - b2) * x * x;
        b1_t *= b1;
        b2_t *= b2;
    }
    return std::fabs(m / (1 - b1_t)) / std::sqrt(v / (1 - b2_t));
}

}  // namespace

TEST_CASE("AdamW's bound is reached by the worst gradients and never passed by random ones") {
    for (const auto& [b1, b2] : {std::pair{0.9f, 0.95f}, std::pair{0.9f, 0.999f}, std::pair{0.8f, 0.99f}}) {
        INFO("beta1 " << b1 << ", beta2 " << b2);
        TrainConfig c;
        c.adamw.beta1 = b1;
        c.adamw.beta2 = b2;
        const double bound = inner_step_rms_bound(c);
        REQUIRE(bound > 0);
        // The equality case of Cauchy-Schwarz at step t: g_k proportional to (β2/β1)^k.
        double worst = 0;
        for (int t = 1; t <= 60000; t += std::max(1, t / 50)) {
            std::vector<double> g(t);
            for (int k = 0; k < t; ++k) g[k] = std::pow(static_cast<double>(b2) / b1, k - t);
            worst = std::max(worst, adam_ratio(g, b1, b2));
        }
        CHECK(worst <= bound * (1 + 1e-6));
        CHECK(worst >= bound * 0.999);  // reached: the bound is tight
        std::mt19937 rng(7);
        std::normal_distribution<double> normal(0.0, 1.0);
        for (int trial = 0; trial < 200; ++trial) {
            std::vector<double> g(1 + rng() % 300);
            for (double& x : g) x = normal(rng) * std::exp(3 * normal(rng));  // wildly varying scales
            CHECK(adam_ratio(g, b1, b2) <= bound * (1 + 1e-6));
        }
    }
    TrainConfig none;
    none.adamw.beta1 = 0.99f;
    none.adamw.beta2 = 0.9f;  // β1² > β2: the ratio is unbounded
    CHECK(inner_step_rms_bound(none) == 0);
}

TEST_CASE("Muon's bound holds for the real Newton-Schulz on random matrices, as core/muon.cpp scales them") {
    TrainConfig c;
    c.optimizer = InnerOptimizer::muon;
    const double bound = inner_step_rms_bound(c);
    TrainConfig adamw;
    CHECK(bound >= inner_step_rms_bound(adamw));
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const auto& [rows, cols] : {std::pair{64, 64}, std::pair{256, 64}, std::pair{32, 192}, std::pair{1, 50}}) {
        std::vector<float> g(static_cast<std::size_t>(rows) * cols);
        for (float& x : g) x = normal(rng);
        newton_schulz(g, rows, cols, c.muon.ns_steps);
        const double scale = 0.2 * std::sqrt(static_cast<double>(std::max(rows, cols)));
        double sum = 0;
        for (float x : g) sum += static_cast<double>(x) * x;
        const double rms = scale * std::sqrt(sum / static_cast<double>(g.size()));
        INFO(rows << " x " << cols << ": RMS " << rms << ", bound " << bound);
        CHECK(rms <= bound);
        CHECK(rms >= 0.1 * bound);  // the same order: the bound is not vacuous
    }
}
