// kernels/cpu/ops.h: the CPU ops, fp32, OpenMP; each a forward/backward pair in its own file.
// Signatures and shapes are those of core/backend.h (which CpuBackend forwards to); backward ops
// accumulate (+=) into gradients. Reductions run in a fixed order, so results do not depend on the
// number of threads except where a file says otherwise (oneDNN's GEMM, which is deterministic for a
// given thread count).
#pragma once

#include <cstddef>

namespace arch::cpu {

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C);

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C);

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C, int OC);
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int N, int C, int OC);

void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH, int KV);
void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp, const float* att, int B,
                        int T, int C, int NH, int KV);

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, float eps, int N, int C);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C);

void rope_forward(float* out, const float* inp, const float* cos, const float* sin, int B, int T, int NH, int KV,
                  int hs);
void rope_backward(float* dinp, const float* dout, const float* cos, const float* sin, int B, int T, int NH, int KV,
                   int hs);

void swiglu_forward(float* out, const float* inp, int N, int F);
void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F);

void gelu_forward(float* out, const float* inp, std::size_t n);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n);

void residual_forward(float* out, const float* a, const float* b, std::size_t n);
void residual_backward(float* da, float* db, const float* dout, std::size_t n);

void crossentropy_forward(float* losses, const float* logits, const int* targets, int N, int V, int Vp);
void crossentropy_backward(float* logits, const int* targets, float dloss, int N, int V, int Vp);

double sum_squares(const float* x, std::size_t n);
void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                  float beta2, float eps, float weight_decay, float grad_scale, int step);

}  // namespace arch::cpu
