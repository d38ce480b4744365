// kernels/cpu/crossentropy.cpp: fused softmax + cross-entropy over the real V of a padded vocab.
// Forward writes one loss per row and keeps the logits; backward turns the logits into dlogits in
// place ((softmax - onehot) * dloss), so no (N,Vp) probability buffer exists. Padded columns get 0.
// Shapes: logits (N,Vp); targets, losses (N).
#include <cmath>

#include "kernels/cpu/ops.h"

namespace arch::cpu {

namespace {
// log(sum(exp(row[:V]))) with the max subtracted; returns it and the max.
float log_sum_exp(const float* row, int V, float* maxval_out) {
    float maxval = -INFINITY;
    for (int j = 0; j < V; ++j) maxval = row[j] > maxval ? row[j] : maxval;
    double sum = 0.0;
    for (int j = 0; j < V; ++j) sum += std::exp(row[j] - maxval);
    *maxval_out = maxval;
    return static_cast<float>(std::log(sum));
}
}  // namespace

void crossentropy_forward(float* losses, const float* logits, const int* targets, int N, int V, int Vp) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* row = logits + static_cast<std::size_t>(i) * Vp;
        float maxval;
        const float lse = log_sum_exp(row, V, &maxval);
        losses[i] = lse - (row[targets[i]] - maxval);
    }
}

void crossentropy_backward(float* logits, const int* targets, float dloss, int N, int V, int Vp) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        float* row = logits + static_cast<std::size_t>(i) * Vp;
        float maxval;
        const float lse = log_sum_exp(row, V, &maxval);
        for (int j = 0; j < V; ++j) row[j] = std::exp(row[j] - maxval - lse) * dloss;
        for (int j = V; j < Vp; ++j) row[j] = 0.0f;
        row[targets[i]] -= dloss;
    }
}

}  // namespace arch::cpu
