// kernels/cuda/ops.h: the CUDA ops of the bf16 GPT-2 and Llama models (launchers; the kernels live in
// one .cu per op).
// Plain C++ so tests and the model can call them without nvcc. Every launcher enqueues on `stream`
// and returns without synchronising unless it says otherwise.
// Precision: weights and activations bf16; master weights, gradients of parameters, AdamW m and v,
// norm statistics, rope tables and losses fp32; every reduction accumulates in fp32 in a fixed
// order, so a rerun on the same GPU gives the same bits (no atomics on floats anywhere).
// Shapes as in kernels/cpu/ops.h: N = B*T rows, Vp padded vocab, hs = C/NH, KV heads of k and v.
// Tolerances against the CPU reference are stated per op in tests/cuda/test_cuda_kernels.cpp and
// tests/cuda/test_cuda_llama_kernels.cpp.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace arch::cuda {

using bf16 = __nv_bfloat16;

// ---- conversions (convert.cu) -------------------------------------------------------------------
// dst = bf16(src), round to nearest even (the same bits as compression's bf16 codec).
void to_bf16(bf16* dst, const float* src, std::size_t n, cudaStream_t stream);
void to_fp32(float* dst, const bf16* src, std::size_t n, cudaStream_t stream);

// ---- encoder (encoder.cu) -----------------------------------------------------------------------
// out (B,T,C) = wte[inp[b,t]] + wpe[t]; inp on the device. wpe null: no positions (Llama).
void encoder_forward(bf16* out, const int* inp, const bf16* wte, const bf16* wpe, int B, int T, int C,
                     cudaStream_t stream);
// dwte, dwpe (fp32) += the gradient of encoder_forward. Deterministic: positions are grouped by token
// on the host from inp_host (the same ids as the device's inp), then each token's row sums its
// positions in order; dwpe null: no positions. scratch_ints: device ints, at least
// encoder_backward_scratch_ints(B, T).
std::size_t encoder_backward_scratch_ints(int B, int T);
void encoder_backward(float* dwte, float* dwpe, int* scratch_ints, const bf16* dout, const int* inp_host, int B,
                      int T, int C, cudaStream_t stream);

// ---- layernorm (layernorm.cu) -------------------------------------------------------------------
// out = (inp - mean) * rstd * weight + bias per row of C (eps 1e-5); mean, rstd (N) fp32 saved.
void layernorm_forward(bf16* out, float* mean, float* rstd, const bf16* inp, const bf16* weight, const bf16* bias,
                       int N, int C, cudaStream_t stream);
// The residual add fused in front: residual = bf16(a + b), then out = layernorm(residual).
void residual_layernorm_forward(bf16* residual, bf16* out, float* mean, float* rstd, const bf16* a, const bf16* b,
                                const bf16* weight, const bf16* bias, int N, int C, cudaStream_t stream);
// dinp (bf16) += d/dinp; dweight, dbias (fp32) += d/dweight, d/dbias, reduced over rows in a fixed
// order through scratch (fp32, layernorm_backward_scratch_floats(N, C) values).
std::size_t layernorm_backward_scratch_floats(int N, int C);
void layernorm_backward(bf16* dinp, float* dweight, float* dbias, float* scratch, const bf16* dout, const bf16* inp,
                        const bf16* weight, const float* mean, const float* rstd, int N, int C, cudaStream_t stream);

// ---- RMSNorm, the Llama family's norm (rmsnorm.cu) ------------------------------------------------
// out = inp * rstd * weight per row of C, rstd = 1/sqrt(mean(inp²) + eps) (N) fp32 saved.
void rmsnorm_forward(bf16* out, float* rstd, const bf16* inp, const bf16* weight, float eps, int N, int C,
                     cudaStream_t stream);
// The residual add fused in front: residual = bf16(a + b), then out = rmsnorm(residual).
void residual_rmsnorm_forward(bf16* residual, bf16* out, float* rstd, const bf16* a, const bf16* b,
                              const bf16* weight, float eps, int N, int C, cudaStream_t stream);
// dinp (bf16) += d/dinp; dweight (fp32) += d/dweight, column sums in a fixed order through scratch
// (fp32, rmsnorm_backward_scratch_floats(N, C) values).
std::size_t rmsnorm_backward_scratch_floats(int N, int C);
void rmsnorm_backward(bf16* dinp, float* dweight, float* scratch, const bf16* dout, const bf16* inp,
                      const bf16* weight, const float* rstd, int N, int C, cudaStream_t stream);

// ---- rotary position embeddings (rope.cu) ------------------------------------------------------
// On qkv rows (B,T,(NH+2KV)hs): each q and k head's pair (i, i + hs/2) at position t becomes
// (x1 cos - x2 sin, x2 cos + x1 sin) (HF's rotate-half); v heads are copied. cos, sin (maxT, hs/2)
// fp32 on the device. Backward applies the transposed rotation to dout into dinp (overwrites). Both
// may run in place (out == inp, dinp == dout).
void rope_forward(bf16* out, const bf16* inp, const float* cos, const float* sin, int B, int T, int NH, int KV,
                  int hs, cudaStream_t stream);
void rope_backward(bf16* dinp, const bf16* dout, const float* cos, const float* sin, int B, int T, int NH, int KV,
                   int hs, cudaStream_t stream);

// ---- SwiGLU (swiglu.cu) -------------------------------------------------------------------------
// out (N,F) = silu(gate) * up, inp (N,2F) holding gate (first F) then up per row (the fused fcw's
// output). Backward writes dinp (N,2F) (overwrites) from inp and dout (N,F).
void swiglu_forward(bf16* out, const bf16* inp, int N, int F, cudaStream_t stream);
void swiglu_backward(bf16* dinp, const bf16* inp, const bf16* dout, int N, int F, cudaStream_t stream);

// ---- GELU, tanh approximation (gelu.cu) ---------------------------------------------------------
void gelu_forward(bf16* out, const bf16* inp, std::size_t n, cudaStream_t stream);
// dinp = gelu'(inp) * dout (overwrites; the model never needs to accumulate here). dinp may alias dout.
void gelu_backward(bf16* dinp, const bf16* inp, const bf16* dout, std::size_t n, cudaStream_t stream);

// ---- bias gradient (bias.cu) --------------------------------------------------------------------
// dbias (OC, fp32) += column sums of dout (N,OC), fixed order through scratch
// (bias_backward_scratch_floats(N, OC) values).
std::size_t bias_backward_scratch_floats(int N, int OC);
void bias_backward(float* dbias, float* scratch, const bf16* dout, int N, int OC, cudaStream_t stream);

// ---- fused classifier: softmax + cross-entropy (classifier.cu) ---------------------------------
// losses (N, fp32) = -log softmax(logits[:V])[target]; logits (N,Vp) bf16, padded columns ignored.
// With write_dlogits, logits become dlogits = (softmax - onehot) * dloss in place (padded columns
// 0), so no (N,Vp) probability buffer exists; without it the logits are left as they are.
void classifier_forward_backward(bf16* logits, float* losses, const int* targets, float dloss, int N, int V, int Vp,
                                 bool write_dlogits, cudaStream_t stream);

// ---- AdamW with fp32 master weights (adamw.cu) ---------------------------------------------------
// torch.optim.AdamW on master (fp32) with grads * grad_scale, m, v fp32; decoupled weight decay;
// step is 1-based. Then params (bf16) = stochastic_round(master) with the counter-based hash of
// (seed, first_index + index) in bf16_math.h, so the same seed gives the same bits and E[params] =
// master; a ZeRO-3 shard passes its distance from the start of the range to round as the whole would.
void adamw_update(float* master, bf16* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, float grad_scale, int step, uint64_t seed,
                  cudaStream_t stream, uint64_t first_index = 0);

// ---- master weights (master_weights.cu) ---------------------------------------------------------
// params (bf16) = stochastic_round(master) with the same hash as adamw_update: what the last update
// with this seed wrote, so a resumed run continues from the same bf16 bits.
void stochastic_round_bf16(bf16* params, const float* master, std::size_t n, uint64_t seed, cudaStream_t stream,
                           uint64_t first_index = 0);
// x = x - y in fp32, one IEEE subtraction per element (the same bits as the host's theta - theta_i).
void subtract(float* x, const float* y, std::size_t n, cudaStream_t stream);
// x = x + y in fp32 (a ZeRO-3 shard adds each micro-batch's reduce-scattered gradients).
void add(float* x, const float* y, std::size_t n, cudaStream_t stream);

// ---- global norm (global_norm.cu) ---------------------------------------------------------------
// Sum of squares of x (n fp32), fixed grid and order (the same bits every run). partials: device
// doubles, at least kSumSquaresPartials. Synchronises the stream and returns the sum.
constexpr int kSumSquaresPartials = 1024;
double sum_squares(const float* x, std::size_t n, double* partials, cudaStream_t stream);

}  // namespace arch::cuda
