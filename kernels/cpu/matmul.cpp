// kernels/cpu/matmul.cpp: linear layer forward and backward; the GEMMs go through oneDNN's sgemm
// (row-major), which is deterministic for a given thread count. Bias work is plain OpenMP.
// Shapes: inp (N,C); weight (OC,C) as nn.Linear; bias (OC) or null; out, dout (N,OC).
#include <oneapi/dnnl/dnnl.h>

#include <string>

#include "core/error.h"
#include "kernels/cpu/ops.h"

namespace arch::cpu {

namespace {
// C (M,N) = alpha * op(A) @ op(B) + beta * C, row-major.
void sgemm(char transa, char transb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
           float beta, float* C, int ldc) {
    const dnnl_status_t status = dnnl_sgemm(transa, transb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
    if (status != dnnl_success)
        throw Error("oneDNN sgemm failed with status " + std::to_string(static_cast<int>(status)) + " for M=" +
                    std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
}
}  // namespace

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC) {
    sgemm('N', 'T', N, OC, C, inp, C, weight, C, 0.0f, out, OC);
    if (bias == nullptr) return;
#pragma omp parallel for
    for (int i = 0; i < N; ++i) {
        float* o = out + static_cast<std::size_t>(i) * OC;
        for (int j = 0; j < OC; ++j) o[j] += bias[j];
    }
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC) {
    sgemm('N', 'N', N, C, OC, dout, OC, weight, C, 1.0f, dinp, C);     // dinp += dout @ weight
    sgemm('T', 'N', OC, C, N, dout, OC, inp, C, 1.0f, dweight, C);     // dweight += dout^T @ inp
    if (dbias == nullptr) return;
#pragma omp parallel for
    for (int j = 0; j < OC; ++j) {
        float s = 0.0f;
        for (int i = 0; i < N; ++i) s += dout[static_cast<std::size_t>(i) * OC + j];
        dbias[j] += s;
    }
}

}  // namespace arch::cpu
