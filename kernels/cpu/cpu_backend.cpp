// kernels/cpu/cpu_backend.cpp: CpuBackend forwards each Backend op to its kernels/cpu function.
#include "kernels/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/cpu/ops.h"

namespace arch {

namespace {

class CpuBackend final : public Backend {
public:
    std::string name() const override { return "cpu"; }

    void* alloc(std::size_t bytes) override {
        const std::size_t rounded = (bytes + 63) / 64 * 64;
        void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
        if (p == nullptr) throw std::bad_alloc();
        std::memset(p, 0, rounded);
        return p;
    }
    void free(void* ptr) override { std::free(ptr); }
    void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void zero(float* x, std::size_t n) override {
#pragma omp parallel for simd
        for (std::size_t i = 0; i < n; ++i) x[i] = 0.0f;
    }
    void copy(float* dst, const float* src, std::size_t n) override { std::memcpy(dst, src, n * sizeof(float)); }

    void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                         int C) override {
        cpu::encoder_forward(out, inp, wte, wpe, B, T, C);
    }
    void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T,
                          int C) override {
        cpu::encoder_backward(dwte, dwpe, dout, inp, B, T, C);
    }
    void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                           const float* bias, int N, int C) override {
        cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
    }
    void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                            const float* weight, const float* mean, const float* rstd, int N, int C) override {
        cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
    }
    void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                        int OC) override {
        cpu::matmul_forward(out, inp, weight, bias, N, C, OC);
    }
    void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                         const float* weight, int N, int C, int OC) override {
        cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC);
    }
    void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH, int KV) override {
        cpu::attention_forward(out, att, inp, B, T, C, NH, KV);
    }
    void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp, const float* att,
                            int B, int T, int C, int NH, int KV) override {
        cpu::attention_backward(dinp, scratch, dout, inp, att, B, T, C, NH, KV);
    }
    void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, float eps, int N,
                         int C) override {
        cpu::rmsnorm_forward(out, rstd, inp, weight, eps, N, C);
    }
    void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                          const float* rstd, int N, int C) override {
        cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C);
    }
    void rope_forward(float* out, const float* inp, const float* cos, const float* sin, int B, int T, int NH, int KV,
                      int hs) override {
        cpu::rope_forward(out, inp, cos, sin, B, T, NH, KV, hs);
    }
    void rope_backward(float* dinp, const float* dout, const float* cos, const float* sin, int B, int T, int NH,
                       int KV, int hs) override {
        cpu::rope_backward(dinp, dout, cos, sin, B, T, NH, KV, hs);
    }
    void swiglu_forward(float* out, const float* inp, int N, int F) override { cpu::swiglu_forward(out, inp, N, F); }
    void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) override {
        cpu::swiglu_backward(dinp, inp, dout, N, F);
    }
    void gelu_forward(float* out, const float* inp, std::size_t n) override { cpu::gelu_forward(out, inp, n); }
    void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) override {
        cpu::gelu_backward(dinp, inp, dout, n);
    }
    void residual_forward(float* out, const float* a, const float* b, std::size_t n) override {
        cpu::residual_forward(out, a, b, n);
    }
    void residual_backward(float* da, float* db, const float* dout, std::size_t n) override {
        cpu::residual_backward(da, db, dout, n);
    }
    void crossentropy_forward(float* losses, const float* logits, const int* targets, int N, int V,
                              int Vp) override {
        cpu::crossentropy_forward(losses, logits, targets, N, V, Vp);
    }
    void crossentropy_backward(float* logits, const int* targets, float dloss, int N, int V, int Vp) override {
        cpu::crossentropy_backward(logits, targets, dloss, N, V, Vp);
    }
    double sum_squares(const float* x, std::size_t n) override { return cpu::sum_squares(x, n); }
    void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr, float beta1,
                      float beta2, float eps, float weight_decay, float grad_scale, int step) override {
        cpu::adamw_update(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, grad_scale, step);
    }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace arch
