// core/backend.h: the ops a device must provide to train GPT-2 and the Llama family; kernels/cpu
// implements it (kernels/cuda has its own bf16 models). Every pointer lives in the backend's own memory (alloc/upload/download move data).
// Backward ops accumulate (+=) into parameter and input gradients, like llm.c, so callers zero them.
// Shapes: N = B*T rows; Vp = padded vocab; hs = C/NH. All fp32 on this interface.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace arch {

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;

    // Memory in the backend's address space.
    virtual void* alloc(std::size_t bytes) = 0;  // zero-filled
    virtual void free(void* ptr) = 0;
    virtual void upload(void* dst, const void* src_host, std::size_t bytes) = 0;
    virtual void download(void* dst_host, const void* src, std::size_t bytes) = 0;
    virtual void zero(float* x, std::size_t n) = 0;
    virtual void copy(float* dst, const float* src, std::size_t n) = 0;

    // out (B,T,C) = wte[inp] + wpe[t]; inp (B,T) token ids. wpe (and dwpe) null: no positions (Llama).
    virtual void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) = 0;
    virtual void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) = 0;

    // out = (x - mean) * rstd * weight + bias per row of C; mean, rstd (N) saved for backward.
    virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                   const float* bias, int N, int C) = 0;
    virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                    const float* weight, const float* mean, const float* rstd, int N, int C) = 0;

    // out (N,OC) = inp (N,C) @ weight (OC,C)^T + bias (OC); bias may be null.
    virtual void matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int N, int C,
                                int OC) = 0;
    virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                 const float* weight, int N, int C, int OC) = 0;

    // Causal self-attention with KV heads shared by groups of NH/KV query heads (KV = NH: GPT-2's):
    // inp (B,T,(NH+2KV)hs) holds q (NH heads), k and v (KV heads each); out (B,T,C); att (B,NH,T,T)
    // softmax saved. hs = C/NH; query head h reads KV head h / (NH/KV), as HF's repeat_kv.
    virtual void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH,
                                   int KV) = 0;
    // scratch (B,NH,T,T) is overwritten; dinp (B,T,(NH+2KV)hs) accumulates.
    virtual void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                                    const float* att, int B, int T, int C, int NH, int KV) = 0;

    // GELU, tanh approximation, elementwise over n.
    virtual void gelu_forward(float* out, const float* inp, std::size_t n) = 0;
    virtual void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n) = 0;

    // Llama family. RMSNorm: out = inp * rstd * weight per row of C, rstd = 1/sqrt(mean(inp²) + eps)
    // saved (N) for backward.
    virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, float eps, int N,
                                 int C) = 0;
    virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                  const float* weight, const float* rstd, int N, int C) = 0;
    // Rotary embeddings on the q and k heads of qkv rows (B,T,(NH+2KV)hs), HF's rotate-half pairing
    // (i, i + hs/2): (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) at position t; v is copied.
    // cos, sin (maxT, hs/2). Backward applies the inverse rotation, accumulating into dinp.
    virtual void rope_forward(float* out, const float* inp, const float* cos, const float* sin, int B, int T, int NH,
                              int KV, int hs) = 0;
    virtual void rope_backward(float* dinp, const float* dout, const float* cos, const float* sin, int B, int T,
                               int NH, int KV, int hs) = 0;
    // SwiGLU: out (N,F) = silu(gate) * up, where inp (N,2F) holds gate (first F) and up per row.
    virtual void swiglu_forward(float* out, const float* inp, int N, int F) = 0;
    virtual void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) = 0;

    // out = a + b; backward: da += dout, db += dout.
    virtual void residual_forward(float* out, const float* a, const float* b, std::size_t n) = 0;
    virtual void residual_backward(float* da, float* db, const float* dout, std::size_t n) = 0;

    // losses (N) = -log softmax(logits[:V])[target]; logits (N,Vp), the padded columns ignored.
    virtual void crossentropy_forward(float* losses, const float* logits, const int* targets, int N, int V, int Vp) = 0;
    // In place: logits (N,Vp) become dlogits = (softmax - onehot) * dloss; padded columns set to 0.
    virtual void crossentropy_backward(float* logits, const int* targets, float dloss, int N, int V, int Vp) = 0;

    // Sum of squares of x (n), accumulated in double with a fixed order (deterministic).
    virtual double sum_squares(const float* x, std::size_t n) = 0;

    // AdamW with decoupled weight decay on n values; grads are multiplied by grad_scale first.
    // step is 1-based (bias correction).
    virtual void adamw_update(float* params, const float* grads, float* m, float* v, std::size_t n, float lr,
                              float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                              int step) = 0;
};

}  // namespace arch
