// kernels/cuda/cuda_gpt2.cpp: the bf16 GPT-2 blocks on one GPU as a sequence of launches (llm.c's
// order): token + position embedding, fused residual + layernorm, cuBLASLt matmuls with bias / GELU
// epilogues, attention (fused or unfused), and the way back; under recompute the way back first
// rebuilds what forward did not keep. Everything else (memory, the lm_head
// and classifier, AdamW, transfers) is CudaTransformer's (cuda_transformer.h).
#include <vector>

#include "kernels/cuda/cuda_transformer.h"

namespace arch::cuda {

namespace {

class Gpt2OnGpu final : public CudaTransformer {
  public:
    using CudaTransformer::CudaTransformer;

  private:
    void allocate_activations(int B, int T) override;
    const bf16* forward_blocks(int B, int T) override;
    void backward_blocks(bf16* dlnf, int B, int T) override;
    // Block l from its ln1 to its MLP's activation (forward, and block recompute in backward).
    void block_forward(int l, int B, int T);
    // What recompute dropped of layer l, rebuilt in the shared buffers before its backward.
    void recompute(int l, int B, int T);

    struct Acts {
        bf16* encoded = nullptr;  // (N,C)
        std::vector<bf16*> ln1, qkv, atty, residual2, ln2, fch, fch_gelu, residual3;
        std::vector<float*> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;
        std::vector<void*> att_saved;  // per layer: P or the log-sum-exp
        bf16* lnf = nullptr;
        float* lnf_mean = nullptr;
        float* lnf_rstd = nullptr;
        bf16* proj = nullptr;  // (N,C) output of a projection before its residual add
        // backward
        bf16* dresidual = nullptr;  // (N,C)
        bf16* dqkv = nullptr;       // (N,3C)
        bf16* dfch = nullptr;       // (N,4C)
        void* att_scratch = nullptr;
        float* ln_scratch = nullptr;
        int* enc_scratch = nullptr;
    } a_;
};

void Gpt2OnGpu::allocate_activations(int B, int T) {
    Acts& a = a_ = Acts{};
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels;
    const int L = config_.num_layers;
    a.encoded = act_bf16(N * C);
    const AttentionSizes att =
        attention_sizes(attention_, B, T, static_cast<int>(C), config_.num_heads);
    // Under recompute the dropped buffers are one shared set (cuda_transformer.h per_layer).
    const bool block = recompute_ == Recompute::block, attn = recompute_ != Recompute::none;
    a.ln1 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln1_mean = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.ln1_rstd = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.qkv = per_layer<bf16>(L, block, [&] { return act_bf16(N * 3 * C); });
    a.atty = per_layer<bf16>(L, attn, [&] { return act_bf16(N * C); });
    a.att_saved = per_layer<void>(L, attn, [&] { return act_bytes(att.saved_bytes); });
    a.residual2 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln2 = per_layer<bf16>(L, block, [&] { return act_bf16(N * C); });
    a.ln2_mean = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.ln2_rstd = per_layer<float>(L, block, [&] { return act_f32(N); });
    a.fch = per_layer<bf16>(L, block, [&] { return act_bf16(N * 4 * C); });
    a.fch_gelu = per_layer<bf16>(L, block, [&] { return act_bf16(N * 4 * C); });
    a.residual3 = per_layer<bf16>(L, false, [&] { return act_bf16(N * C); });  // the next block's input
    a.lnf = act_bf16(N * C);
    a.lnf_mean = act_f32(N);
    a.lnf_rstd = act_f32(N);
    a.proj = scratch_bf16(N * C);
    a.dresidual = scratch_bf16(N * C);
    a.dqkv = scratch_bf16(N * 3 * C);
    a.dfch = scratch_bf16(N * 4 * C);
    a.att_scratch = scratch_bytes(att.scratch_bytes);
    a.ln_scratch =
        scratch_f32(layernorm_backward_scratch_floats(static_cast<int>(N), static_cast<int>(C)));
    bias_scratch_ =
        scratch_f32(bias_backward_scratch_floats(static_cast<int>(N), static_cast<int>(4 * C)));
    a.enc_scratch = static_cast<int*>(scratch_bytes(encoder_backward_scratch_ints(B, T) * sizeof(int)));
}

const bf16* Gpt2OnGpu::forward_blocks(int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, L = config_.num_layers;
    encoder_forward(a.encoded, tokens(), weight(layout_.wte()), weight(layout_.wpe()), B, T, C,
                    stream_);
    enter_unit(0);
    layernorm_forward(a.ln1[0], a.ln1_mean[0], a.ln1_rstd[0], a.encoded,
                      weight(layout_.block(0).ln1w), weight(layout_.block(0).ln1b), N, C,
                      stream_);
    for (int l = 0; l < L; ++l) {
        enter_unit(l);  // (block 0 was entered for its ln1 above; the next block's ln1 is read below)
        const BlockOffsets& o = layout_.block(l);
        block_forward(l, B, T);
        matmul_forward(a.proj, a.fch_gelu[l], o.fcprojw, o.fcprojb, N, 4 * C, C);
        // The next layernorm (the next block's ln1, or ln_f) with this block's second residual add.
        const bool last = l == L - 1;
        bf16* next_ln = last ? a.lnf : a.ln1[l + 1];
        float* next_mean = last ? a.lnf_mean : a.ln1_mean[l + 1];
        float* next_rstd = last ? a.lnf_rstd : a.ln1_rstd[l + 1];
        const std::size_t w = last ? layout_.lnfw() : layout_.block(l + 1).ln1w;
        const std::size_t b = last ? layout_.lnfb() : layout_.block(l + 1).ln1b;
        residual_layernorm_forward(a.residual3[l], next_ln, next_mean, next_rstd, a.residual2[l],
                                   a.proj, weight(w), weight(b), N, C, stream_);
        leave_unit(l);
    }
    return a.lnf;
}

void Gpt2OnGpu::block_forward(int l, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads;
    const BlockOffsets& o = layout_.block(l);
    const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
    matmul_forward(a.qkv[l], a.ln1[l], o.qkvw, o.qkvb, N, C, 3 * C);
    attention_forward(attention_, *gemm_, a.atty[l], a.att_saved[l], a.att_scratch, a.qkv[l], B, T,
                      C, NH, NH);
    matmul_forward(a.proj, a.atty[l], o.attprojw, o.attprojb, N, C, C);
    residual_layernorm_forward(a.residual2[l], a.ln2[l], a.ln2_mean[l], a.ln2_rstd[l], residual,
                               a.proj, weight(o.ln2w), weight(o.ln2b), N, C, stream_);
    matmul_forward(a.fch_gelu[l], a.ln2[l], o.fcw, o.fcb, N, C, 4 * C, a.fch[l]);
}

void Gpt2OnGpu::recompute(int l, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads;
    if (recompute_ == Recompute::attention) {
        attention_forward(attention_, *gemm_, a.atty[l], a.att_saved[l], a.att_scratch, a.qkv[l], B,
                          T, C, NH, NH);
    } else if (recompute_ == Recompute::block) {
        // ln1 as forward made it (the previous block's fused residual + layernorm normalizes the
        // same rows with the same code), then the block up to its MLP's activation.
        const BlockOffsets& o = layout_.block(l);
        layernorm_forward(a.ln1[l], a.ln1_mean[l], a.ln1_rstd[l], l == 0 ? a.encoded : a.residual3[l - 1],
                          weight(o.ln1w), weight(o.ln1b), N, C, stream_);
        block_forward(l, B, T);
    }
}

void Gpt2OnGpu::backward_blocks(bf16* dln, int B, int T) {
    Acts& a = a_;
    const int N = B * T, C = config_.channels, NH = config_.num_heads, L = config_.num_layers;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    check(cudaMemsetAsync(a.dresidual, 0, NC * sizeof(bf16), stream_), "cudaMemset");
    layernorm_backward(a.dresidual, grad(layout_.lnfw()), grad(layout_.lnfb()), a.ln_scratch,
                       dln, a.residual3[L - 1], weight(layout_.lnfw()), a.lnf_mean, a.lnf_rstd, N,
                       C, stream_);
    for (int l = L - 1; l >= 0; --l) {
        enter_unit(l);
        recompute(l, B, T);
        const BlockOffsets& o = layout_.block(l);
        const bf16* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dresidual flows through.
        matmul_backward(a.dfch, o.fcprojw, o.fcprojb, a.dresidual, a.fch_gelu[l], N, 4 * C, C);
        gelu_backward(a.dfch, a.fch[l], a.dfch, NC * 4, stream_);
        matmul_backward(dln, o.fcw, o.fcb, a.dfch, a.ln2[l], N, C, 4 * C);
        layernorm_backward(a.dresidual, grad(o.ln2w), grad(o.ln2b), a.ln_scratch, dln,
                           a.residual2[l], weight(o.ln2w), a.ln2_mean[l], a.ln2_rstd[l], N, C,
                           stream_);
        // residual2 = residual + attproj(attention(qkv(ln1(residual)))).
        matmul_backward(dln, o.attprojw, o.attprojb, a.dresidual, a.atty[l], N, C, C);  // d(atty)
        attention_backward(attention_, *gemm_, a.dqkv, a.att_scratch, dln, a.qkv[l], a.atty[l],
                           a.att_saved[l], B, T, C, NH, NH);
        matmul_backward(dln, o.qkvw, o.qkvb, a.dqkv, a.ln1[l], N, C, 3 * C);  // dln = d(ln1)
        layernorm_backward(a.dresidual, grad(o.ln1w), grad(o.ln1b), a.ln_scratch, dln,
                           residual, weight(o.ln1w), a.ln1_mean[l], a.ln1_rstd[l], N, C, stream_);
        leave_unit(l);
    }
    encoder_backward(grad(layout_.wte()), grad(layout_.wpe()), a.enc_scratch, a.dresidual,
                     tokens_host(), B, T, C, stream_);
}

}  // namespace

std::unique_ptr<CudaModel> make_cuda_gpt2(const ModelConfig& config,
                                          const CudaModelOptions& options) {
    return std::make_unique<Gpt2OnGpu>(config, options);
}

}  // namespace arch::cuda
