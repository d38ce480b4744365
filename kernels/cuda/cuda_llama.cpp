// kernels/cuda/cuda_llama.cpp: the bf16 Llama blocks on one GPU as a sequence of launches, in the
// CPU Llama's order (core/llama.cpp): token embedding, RMSNorm (the residual add fused in front of
// every norm but the first), the fused qkv matmul, rotary embeddings in place on its q and k heads
// (rope is linear, so backward needs no pre-rotation copy), grouped-query attention (fused or
// unfused), o-proj, the fused gate|up matmul, SwiGLU, down-proj; no biases. The cos/sin tables
// (core/llama.h rope_tables, fp32) are uploaded once. Everything else (memory, the tied or untied
// lm_head and classifier, AdamW, transfers) is CudaTransformer's (cuda_transformer.h).
#include <vector>

#include "core/llama.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_transformer.h"

namespace arch::cuda {

namespace {

class LlamaOnGpu final : public CudaTransformer {
  public:
    LlamaOnGpu(const ModelConfig& config, const CudaModelOptions& options);

  private:
    void allocate_activations(int B, int T) override;
    const bf16* forward_blocks(int B, int T) override;
    void backward_blocks(bf16* dlnf, int B, int T) override;
    // Block l from its ln1 to its MLP's activation (forward, and block recompute in backward).
    void block_forward(int l, int B, int T);
    // What recompute dropped of layer l, rebuilt in the shared buffers before its backward.
    void recompute(int l, int B, int T);

    float* rope_cos_ = nullptr;  // (maxT, hs/2) fp32
    float* rope_sin_ = nullptr;

    struct Acts {
        bf16* encoded = nullptr;  // (N,C)
        // per layer: qkv (N,QKV) after rope; fch (N,2F) gate|up; fch_swiglu (N,F)
        std::vector<bf16*> ln1, qkv, atty, residual2, ln2, fch, fch_swiglu, residual3;
        std::vector<float*> ln1_rstd, ln2_rstd;
        std::vector<void*> att_saved;  // per layer: P or the log-sum-exp
        bf16* lnf = nullptr;
        float* lnf_rstd = nullptr;
        bf16* proj = nullptr;  // (N,C) output of a projection before its residual add
        // backward
        bf16* dresidual = nullptr;    // (N,C)
        bf16* dqkv = nullptr;         // (N,QKV)
        bf16* dfch = nullptr;         // (N,2F)
        bf16* dfch_swiglu = nullptr;  // (N,F)
        void* att_scratch = nullptr;
        float* norm_scratch = nullptr;
        int* enc_scratch = nullptr;
    } a_;
};

LlamaOnGpu::LlamaOnGpu(const ModelConfig& config, const CudaModelOptions& options)
    : CudaTransformer(config, options) {
    const RopeTables tables = rope_tables(config_);
    const std::size_t bytes = tables.cos.size() * sizeof(float);
    rope_cos_ = static_cast<float*>(alloc(bytes));
    rope_sin_ = static_cast<float*>(alloc(bytes));
    check(cudaMemcpyAsync(rope_cos_, tables.cos.data(), bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (rope cos)");
    check(cudaMemcpyAsync(rope_sin_, tables.sin.data(), bytes, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (rope sin)");
    sync();  // tables is a local
}

void LlamaOnGpu::allocate_activations(int B, int T) {
    Acts& a = a_ = Acts{};
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels;
    const std::size_t QKV = qkv_channels(config_), F = config_.ffn_hidden;
    const int L = config_.num_layers;
    a.encoded = act_bf16(N * C);
    const AttentionSizes att =
        attention_sizes(attention_, B, T, static_cast<int>(C), config_.num_heads);
    // Under recompute the dropped buffers are one shared set (cuda_transformer.h per_layer).
    const bool block = recompute_ == Recompute::block, attn = recompute_ != Recompute::none;
    a.ln1 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln1_rstd = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.qkv = per_layer<bf16>(L, block, [&] { return act_bf16(N * QKV); });
    a.atty = per_layer<bf16>(L, attn, [&] { return act_bf16(N * C); });
    a.att_saved = per_layer<void>(L, attn, [&] { return act_bytes(att.saved_bytes); });
    a.residual2 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln2 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln2_rstd = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.fch = per_layer<bf16>(L, block, [&] { return act_bf16(N * 2 * F); });
    a.fch_swiglu = per_layer<bf16>(L, block, [&] { return act_bf16(N * F); });
    a.residual3 = per_layer<bf16>(L, false, [&] { return act_bf16(N * C); });  // the next block's input
    a.lnf = act_bf16(N * C);
    a.lnf_rstd = act_f32(N);
    a.proj = scratch_bf16(N * C);
    a.dresidual = scratch_bf16(N * C);
    a.dqkv = scratch_bf16(N * QKV);
    a.dfch = scratch_bf16(N * 2 * F);
    a.dfch_swiglu = scratch_bf16(N * F);
    a.att_scratch = scratch_bytes(att.scratch_bytes);
    a.norm_scratch =
        scratch_f32(rmsnorm_backward_scratch_floats(static_cast<int>(N), static_cast<int>(C)));
    a.enc_scratch = static_cast<int*>(scratch_bytes(encoder_backward_scratch_ints(B, T) * sizeof(int)));
}

const bf16* LlamaOnGpu::forward_blocks(int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, L = config_.num_layers, F = config_.ffn_hidden;
    const float eps = config_.norm_eps;
    encoder_forward(a.encoded, tokens(), weight(layout_.wte()), nullptr, B, T, C, stream_);
    enter_unit(0);
    rmsnorm_forward(a.ln1[0], a.ln1_rstd[0], a.encoded, weight(layout_.block(0).ln1w), eps, N, C,
                    stream_);
    for (int l = 0; l < L; ++l) {
        enter_unit(l);  // (block 0 was entered for its ln1 above; the next block's ln1 is read below)
        const BlockOffsets& o = layout_.block(l);
        block_forward(l, B, T);
        matmul_forward(a.proj, a.fch_swiglu[l], o.fcprojw, kAbsent, N, F, C);
        // The next norm (the next block's ln1, or the final one) with this block's second residual.
        const bool last = l == L - 1;
        bf16* next_ln = last ? a.lnf : a.ln1[l + 1];
        float* next_rstd = last ? a.lnf_rstd : a.ln1_rstd[l + 1];
        const std::size_t w = last ? layout_.lnfw() : layout_.block(l + 1).ln1w;
        residual_rmsnorm_forward(a.residual3[l], next_ln, next_rstd, a.residual2[l], a.proj,
                                 weight(w), eps, N, C, stream_);
        leave_unit(l);
    }
    return a.lnf;
}

void LlamaOnGpu::block_forward(int l, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads, KV = config_.num_kv_heads;
    const int F = config_.ffn_hidden, QKV = qkv_channels(config_), hs = head_size(config_);
    const BlockOffsets& o = layout_.block(l);
    const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
    matmul_forward(a.qkv[l], a.ln1[l], o.qkvw, kAbsent, N, C, QKV);
    rope_forward(a.qkv[l], a.qkv[l], rope_cos_, rope_sin_, B, T, NH, KV, hs, stream_);
    attention_forward(attention_, *gemm_, a.atty[l], a.att_saved[l], a.att_scratch, a.qkv[l], B, T,
                      C, NH, KV);
    matmul_forward(a.proj, a.atty[l], o.attprojw, kAbsent, N, C, C);
    residual_rmsnorm_forward(a.residual2[l], a.ln2[l], a.ln2_rstd[l], residual, a.proj,
                             weight(o.ln2w), config_.norm_eps, N, C, stream_);
    matmul_forward(a.fch[l], a.ln2[l], o.fcw, kAbsent, N, C, 2 * F);
    swiglu_forward(a.fch_swiglu[l], a.fch[l], N, F, stream_);
}

void LlamaOnGpu::recompute(int l, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads, KV = config_.num_kv_heads;
    if (recompute_ == Recompute::attention) {
        attention_forward(attention_, *gemm_, a.atty[l], a.att_saved[l], a.att_scratch, a.qkv[l], B,
                          T, C, NH, KV);
    } else if (recompute_ == Recompute::block) {
        // ln1 as forward made it (the previous block's fused residual + RMSNorm normalizes the same
        // rows with the same code), then the block up to its MLP's activation.
        rmsnorm_forward(a.ln1[l], a.ln1_rstd[l], l == 0 ? a.encoded : a.residual3[l - 1],
                        weight(layout_.block(l).ln1w), config_.norm_eps, N, C, stream_);
        block_forward(l, B, T);
    }
}

void LlamaOnGpu::backward_blocks(bf16* dln, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads, KV = config_.num_kv_heads;
    const int L = config_.num_layers, F = config_.ffn_hidden;
    const int QKV = qkv_channels(config_), hs = head_size(config_);
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    check(cudaMemsetAsync(a.dresidual, 0, NC * sizeof(bf16), stream_), "cudaMemset");
    rmsnorm_backward(a.dresidual, grad(layout_.lnfw()), a.norm_scratch, dln, a.residual3[L - 1],
                     weight(layout_.lnfw()), a.lnf_rstd, N, C, stream_);
    for (int l = L - 1; l >= 0; --l) {
        enter_unit(l);
        recompute(l, B, T);
        const BlockOffsets& o = layout_.block(l);
        const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        // residual3 = residual2 + fcproj(swiglu(fc(ln2(residual2)))); dresidual flows through.
        matmul_backward(a.dfch_swiglu, o.fcprojw, kAbsent, a.dresidual, a.fch_swiglu[l], N, F, C);
        swiglu_backward(a.dfch, a.fch[l], a.dfch_swiglu, N, F, stream_);
        matmul_backward(dln, o.fcw, kAbsent, a.dfch, a.ln2[l], N, C, 2 * F);
        rmsnorm_backward(a.dresidual, grad(o.ln2w), a.norm_scratch, dln, a.residual2[l],
                         weight(o.ln2w), a.ln2_rstd[l], N, C, stream_);
        // residual2 = residual + attproj(attention(rope(qkv(ln1(residual))))).
        matmul_backward(dln, o.attprojw, kAbsent, a.dresidual, a.atty[l], N, C, C);  // d(atty)
        attention_backward(attention_, *gemm_, a.dqkv, a.att_scratch, dln, a.qkv[l], a.atty[l],
                           a.att_saved[l], B, T, C, NH, KV);
        rope_backward(a.dqkv, a.dqkv, rope_cos_, rope_sin_, B, T, NH, KV, hs, stream_);
        matmul_backward(dln, o.qkvw, kAbsent, a.dqkv, a.ln1[l], N, C, QKV);  // dln = d(ln1)
        rmsnorm_backward(a.dresidual, grad(o.ln1w), a.norm_scratch, dln, residual,
                         weight(o.ln1w), a.ln1_rstd[l], N, C, stream_);
        leave_unit(l);
    }
    encoder_backward(grad(layout_.wte()), nullptr, a.enc_scratch, a.dresidual, tokens_host(), B,
                     T, C, stream_);
}

}  // namespace

std::unique_ptr<CudaModel> make_cuda_llama(const ModelConfig& config,
                                           const CudaModelOptions& options) {
    return std::make_unique<LlamaOnGpu>(config, options);
}

}  // namespace arch::cuda
