// kernels/cpu/crossentropy.cpp: fused softmax + cross-entropy over the real V of a padded vocab.
// Forward writes one loss per row and keeps the logits; backward turns the logits into dlogits in
// place ((softmax - onehot) * dloss), so no (N,Vp) probability buffer exists. Padded columns get 0.
// Shapes: logits (N,Vp); targets, losses (N).
#include <cmath>

#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/ops.h"

namespace arch::cpu {

namespace {
float row_max(const float* row, int V) {
    float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
    for (int j = 0; j < V; ++j) maxval = row[j] > maxval ? row[j] : maxval;
    return maxval;
}
}  // namespace

void crossentropy_forward(float* losses, const float* logits, const int* targets, int N, int V, int Vp) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        const float* row = logits + static_cast<std::size_t>(i) * Vp;
        const float maxval = row_max(row, V);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < V; ++j) sum += fast_exp(row[j] - maxval);
        losses[i] = std::log(sum) - (row[targets[i]] - maxval);
    }
}

void crossentropy_backward(float* logits, const int* targets, float dloss, int N, int V, int Vp) {
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        float* row = logits + static_cast<std::size_t>(i) * Vp;
        const float maxval = row_max(row, V);
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < V; ++j) {
            row[j] = fast_exp(row[j] - maxval);
            sum += row[j];
        }
        const float scale = dloss / sum;
#pragma omp simd
        for (int j = 0; j < V; ++j) row[j] *= scale;
        for (int j = V; j < Vp; ++j) row[j] = 0.0f;
        row[targets[i]] -= dloss;
    }
}

}  // namespace arch::cpu
