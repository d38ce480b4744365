// tests/core/test_step_bound.cpp: inner_step_rms_bound against a second implementation: Adam's two
// moving averages simulated step by step for the gradients that make |m̂|/sqrt(v̂) largest (growing by
// β2/β1 a step, Cauchy-Schwarz's equality case) and for random ones; Muon's against the real
// Newton-Schulz on random matrices, scaled as core/muon.cpp scales them. The per-value bound and
// AdamW's raw moments (|m| within k sqrt(v), and clipped gradients' sizes), the real AdamW's included:
// the host holds every island's Δ and DES-LOC moments to them (issue 30, class 4).
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <cmath>
#include <random>
#include <vector>

#include "core/adamw.h"
#include "core/inner_loop.h"
#include "core/model_config.h"
#include "core/muon.h"
#include "core/param_layout.h"
#include "kernels/cpu/cpu_backend.h"

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
            std::vector<double> g(t);  // (β2/β1)^(k - t), from the last one back: a product per value, not a pow
            const double inverse = static_cast<double>(b1) / b2;
            double power = 1;
            for (int k = t - 1; k >= 0; --k) g[k] = power *= inverse;
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

TEST_CASE("AdamW's raw moments keep |m| within k sqrt(v), tight for the worst gradients; the real AdamW's, clipped, keep |m| <= c and sum v <= c^2") {
    const AdamWConfig a;  // β 0.9 and 0.95
    const double k = adamw_moment_ratio_bound(a);
    CHECK(k == Approx(1.165).epsilon(1e-3));
    // The equality case, raw moments (no bias correction): g_k ∝ (β2/β1)^k over a long run.
    double worst = 0;
    for (int t : {10, 100, 1000, 5000}) {
        double m = 0, v = 0;
        for (int j = 0; j < t; ++j) {
            const double g = std::pow(static_cast<double>(a.beta2) / a.beta1, j - t);
            m = a.beta1 * m + (1 - a.beta1) * g;
            v = a.beta2 * v + (1 - a.beta2) * g * g;
        }
        worst = std::max(worst, std::fabs(m) / std::sqrt(v));
    }
    CHECK(worst <= k * (1 + 1e-9));
    CHECK(worst >= k * 0.999);
    // The real AdamW on the CPU backend: gradients of wildly varying scale, clipped to c by its step.
    const ModelConfig model = model_preset("tiny");
    const ParamLayout layout(model);
    std::unique_ptr<Backend> backend = make_cpu_backend();
    AdamW adamw(layout, *backend);
    AdamWConfig config;
    config.grad_clip = 0.5f;
    std::vector<float> params(layout.num_params(), 0.01f), grads(layout.num_params());
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (std::size_t step = 0; step < 40; ++step) {
        const float scale = std::exp(4.0f * normal(rng));
        for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = scale * normal(rng) * (i % 97 == step % 97 ? 100.0f : 1.0f);
        adamw.step(params.data(), grads.data(), 1e-3f, config);
    }
    std::vector<float> m(layout.num_params()), v(layout.num_params());
    adamw.get_state(m, v);
    double ratio = 0, m2 = 0, v1 = 0;
    for (std::size_t i = 0; i < m.size(); ++i) {
        if (v[i] > 0) ratio = std::max(ratio, std::fabs(static_cast<double>(m[i])) / std::sqrt(static_cast<double>(v[i])));
        m2 += static_cast<double>(m[i]) * m[i];
        v1 += v[i];
    }
    INFO("largest |m|/sqrt(v) " << ratio << ", |m| " << std::sqrt(m2) << ", sum of v " << v1);
    CHECK(ratio <= k * (1 + 1e-3));
    CHECK(ratio > 0.3 * k);  // not vacuous
    CHECK(std::sqrt(m2) <= config.grad_clip * (1 + 1e-3));
    CHECK(v1 <= config.grad_clip * config.grad_clip * (1 + 1e-3));
}

TEST_CASE("the per-value bound: AdamW's is its RMS bound; Muon's holds for a step's largest entry, reached by a one-entry gradient") {
    TrainConfig adamw;
    CHECK(inner_step_value_bound(adamw, 3072) == inner_step_rms_bound(adamw));
    TrainConfig c;
    c.optimizer = InnerOptimizer::muon;
    for (const auto& [rows, cols] : {std::pair{64, 64}, std::pair{256, 64}, std::pair{32, 192}}) {
        const double bound = inner_step_value_bound(c, std::max(rows, cols));
        const double scale = 0.2 * std::sqrt(static_cast<double>(std::max(rows, cols)));
        std::mt19937 rng(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> g(static_cast<std::size_t>(rows) * cols);
        for (float& x : g) x = normal(rng);
        newton_schulz(g, rows, cols, c.muon.ns_steps);
        double largest = 0;
        for (float x : g) largest = std::max(largest, scale * std::fabs(x));
        CHECK(largest <= bound);
        std::fill(g.begin(), g.end(), 0.0f);  // all of the step on one entry
        g[static_cast<std::size_t>(cols) + 1] = 1.0f;
        newton_schulz(g, rows, cols, c.muon.ns_steps);
        const double one = scale * std::fabs(g[static_cast<std::size_t>(cols) + 1]);
        INFO(rows << " x " << cols << ": one entry " << one << ", bound " << bound);
        CHECK(one <= bound);
        CHECK(one >= 0.5 * bound);
    }
    // The widest side of GPT-2's matrices is its MLP's, 4C.
    CHECK(muon_widest_side(ParamLayout(model_preset("gpt2-124m"))) == 4 * 768);
}
