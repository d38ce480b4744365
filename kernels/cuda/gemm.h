// kernels/cuda/gemm.h: bf16 GEMMs through cuBLASLt with fp32 accumulation, in row-major terms, with the
// bias and GELU epilogues the model's forward fuses into its matmuls. The algorithm is fixed per shape
// and cuBLASLt's split-K reductions use no atomics, so results are the same bits run to run on one GPU.
#pragma once

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace arch::cuda {

// One cuBLASLt handle and workspace, bound to a stream (one per model / device).
class GemmContext {
public:
    explicit GemmContext(cudaStream_t stream);
    ~GemmContext();
    GemmContext(const GemmContext&) = delete;
    GemmContext& operator=(const GemmContext&) = delete;
    cudaStream_t stream() const { return stream_; }
    cublasLtHandle_t handle() const { return handle_; }
    void* workspace() const { return workspace_; }
    std::size_t workspace_bytes() const { return workspace_bytes_; }

private:
    cudaStream_t stream_;
    cublasLtHandle_t handle_ = nullptr;
    void* workspace_ = nullptr;
    std::size_t workspace_bytes_ = 32u << 20;
};

enum class Epilogue {
    none,
    bias,       // D = op(A) op(B) + bias (bias has N values, added to every row)
    gelu_bias,  // aux = op(A) op(B) + bias (bf16, M x N, the pre-GELU values); D = gelu_tanh(aux)
};

struct GemmBatch {
    int count = 1;          // number of independent GEMMs
    long long stride_a = 0;  // elements between consecutive A, B, D matrices
    long long stride_b = 0;
    long long stride_d = 0;
};

// Row-major: D (M x N) = alpha * op(A) * op(B) + beta * D, where op(A) is M x K (A stored K x M
// when trans_a) and op(B) is K x N (B stored N x K when trans_b). A, B bf16; D bf16, or fp32 when
// d_fp32 (then beta = 1 accumulates gradients in fp32). Epilogues need beta = 0 and a bf16 D.
void gemm(GemmContext& ctx, void* D, bool d_fp32, const __nv_bfloat16* A, bool trans_a, const __nv_bfloat16* B,
          bool trans_b, int M, int N, int K, float alpha = 1.0f, float beta = 0.0f, const GemmBatch& batch = {},
          Epilogue epilogue = Epilogue::none, const __nv_bfloat16* bias = nullptr, __nv_bfloat16* aux = nullptr);

}  // namespace arch::cuda
