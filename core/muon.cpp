// core/muon.cpp: Newton-Schulz orthogonalization and the Muon step (muon.h).
#include "core/muon.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace arch {
namespace {

constexpr float kA = 3.4445f, kB = -4.7750f, kC = 2.0315f;

// C (M, N) = alpha op(A) op(B) + beta C, row-major, on oneDNN's sgemm (as kernels/cpu/matmul.cpp).
void gemm(char ta, char tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
          float* C, int ldc) {
    if (dnnl_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) != dnnl_success)
        throw Error("newton_schulz: oneDNN sgemm failed");
}

// x (r x c, r <= c) through the quintic: A = x xᵀ, B = b A + c A², x = a x + B x.
void iterate(std::vector<float>& x, int r, int c, int steps) {
    std::vector<float> A(static_cast<std::size_t>(r) * r), B(A.size()), next(x.size());
    for (int s = 0; s < steps; ++s) {
        gemm('N', 'T', r, r, c, 1.0f, x.data(), c, x.data(), c, 0.0f, A.data(), r);
        for (std::size_t k = 0; k < A.size(); ++k) B[k] = kB * A[k];
        gemm('N', 'N', r, r, r, kC, A.data(), r, A.data(), r, 1.0f, B.data(), r);
        for (std::size_t k = 0; k < x.size(); ++k) next[k] = kA * x[k];
        gemm('N', 'N', r, c, r, 1.0f, B.data(), r, x.data(), c, 1.0f, next.data(), c);
        x.swap(next);
    }
}

}  // namespace

float newton_schulz_scalar(float sigma, int steps) {
    for (int s = 0; s < steps; ++s) sigma = kA * sigma + kB * sigma * sigma * sigma + kC * sigma * sigma * sigma * sigma * sigma;
    return sigma;
}

void newton_schulz(std::span<float> g, int rows, int cols, int steps) {
    if (rows <= 0 || cols <= 0 || g.size() != static_cast<std::size_t>(rows) * cols)
        throw Error("newton_schulz: " + std::to_string(g.size()) + " floats for a " + std::to_string(rows) + " x " +
                    std::to_string(cols) + " matrix");
    double norm = 0;
    for (float v : g) norm += static_cast<double>(v) * v;
    norm = std::sqrt(norm);
    if (norm == 0) return;
    const bool wide = rows <= cols;  // iterate on the side whose Gram matrix is smaller
    const int r = wide ? rows : cols, c = wide ? cols : rows;
    std::vector<float> x(g.size());
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j)
            x[wide ? i * cols + j : j * rows + i] = static_cast<float>(g[i * cols + j] / (norm + 1e-7));
    iterate(x, r, c, steps);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) g[i * cols + j] = x[wide ? i * cols + j : j * rows + i];
}

std::vector<TensorView> muon_matrices(const ParamLayout& layout) {
    std::vector<TensorView> matrices;
    for (std::size_t l = 0; l < layout.num_blocks(); ++l) {
        const BlockOffsets& b = layout.block(static_cast<int>(l));
        for (const TensorView& t : layout.tensors())
            if (t.offset == b.qkvw || t.offset == b.attprojw || t.offset == b.fcw || t.offset == b.fcprojw)
                matrices.push_back(t);
    }
    return matrices;
}

int muon_widest_side(const ParamLayout& layout) {
    int widest = 0;
    for (const TensorView& t : muon_matrices(layout)) widest = std::max({widest, t.shape[0], t.shape[1]});
    return widest;
}

Muon::Muon(const ParamLayout& layout, const MuonConfig& config) : config_(config), matrices_(muon_matrices(layout)) {
    for (const TensorView& t : matrices_) momentum_.emplace_back(t.size, 0.0f);
}

void Muon::step(std::span<float> after, std::span<const float> before, std::span<const float> grads, float lr,
                float weight_decay) {
    if (after.size() != before.size() || grads.size() != before.size()) throw Error("Muon::step: buffers of different sizes");
    for (std::size_t m = 0; m < matrices_.size(); ++m) {
        const TensorView& t = matrices_[m];
        const int rows = t.shape[0], cols = t.shape[1];
        std::vector<float>& mom = momentum_[m];
        std::vector<float> u(t.size);
        for (std::size_t k = 0; k < t.size; ++k) {
            const float g = grads[t.offset + k];
            mom[k] = config_.momentum * mom[k] + g;
            u[k] = g + config_.momentum * mom[k];
        }
        newton_schulz(u, rows, cols, config_.ns_steps);
        const float scale = 0.2f * std::sqrt(static_cast<float>(std::max(rows, cols)));
        for (std::size_t k = 0; k < t.size; ++k) {
            const float w = before[t.offset + k];
            after[t.offset + k] = w * (1.0f - lr * weight_decay) - lr * scale * u[k];
        }
    }
}

}  // namespace arch
