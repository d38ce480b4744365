// core/muon.h: Muon (momentum orthogonalized by Newton-Schulz) for the blocks' matmul weights, the
// inner optimizer MuLoCo tries in DiLoCo. The embeddings, biases and norms stay with AdamW. The
// update is Moonshot's RMS-matched form, so AdamW's learning rate and weight decay carry over:
//   m = μ m + g;  u = g + μ m (Nesterov);  W = W (1 - lr wd) - lr · 0.2 √max(rows, cols) · NS5(u)
// NS5 is Keller Jordan's quintic iteration on u / ‖u‖_F: each singular value σ goes to
// aσ + bσ³ + cσ⁵ per step (a, b, c = 3.4445, -4.7750, 2.0315), pushing them all towards 1, so
// NS5(u) ≈ U Vᵀ. run.toml inner.optimizer = "muon" and bench_convergence --inner-optimizer use it
// (docs/results.md); one device only, and its momentum is not saved with a checkpoint.
#pragma once

#include <span>
#include <vector>

#include "core/param_layout.h"

namespace arch {

struct MuonConfig {
    float momentum = 0.95f;
    int ns_steps = 5;
};

// g (rows x cols, row-major) replaced by NS5(g / ‖g‖_F) after `steps` iterations; a zero g stays zero.
void newton_schulz(std::span<float> g, int rows, int cols, int steps);
// What `steps` iterations do to one singular value of g / ‖g‖_F.
float newton_schulz_scalar(float sigma, int steps);

// The tensors Muon moves: each block's matmul weights, in layout order.
std::vector<TensorView> muon_matrices(const ParamLayout& layout);
// The widest side (rows or columns) of those matrices: an entry of Muon's step is at most
// 0.2 √(that side) × NS5's largest singular value.
int muon_widest_side(const ParamLayout& layout);

class Muon {
public:
    Muon(const ParamLayout& layout, const MuonConfig& config);
    // after: θ as AdamW left it (AdamW stepped every tensor); before: θ before that step; grads: this
    // step's. Overwrites the blocks' matmul weights in `after` with Muon's step from `before`.
    void step(std::span<float> after, std::span<const float> before, std::span<const float> grads, float lr,
              float weight_decay);
    const std::vector<TensorView>& matrices() const { return matrices_; }

private:
    MuonConfig config_;
    std::vector<TensorView> matrices_;
    std::vector<std::vector<float>> momentum_;
};

}  // namespace arch
