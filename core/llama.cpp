// core/llama.cpp: the Llama forward and backward passes as a sequence of Backend ops, in the order
// of GPT-2's (core/gpt2.cpp): one running gradient of the residual stream, scratch zeroed before each
// accumulating op. Rotary embeddings are applied to a copy of q and k (qkvr), which attention saves;
// rope is linear, so backward needs no pre-rotation copy.
#include "core/llama.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace arch {

std::vector<float> llama_init_params(const ModelConfig& config, uint64_t seed) {
    const ParamLayout layout(config);
    std::vector<float> host(layout.num_params(), 0.0f);
    Rng rng(seed);
    for (const TensorView& t : layout.tensors()) {
        float* p = host.data() + t.offset;
        if (t.shape.size() == 1) {  // RMSNorm weights
            std::fill(p, p + t.size, 1.0f);
            continue;
        }
        std::size_t count = t.size;
        if (t.offset == layout.wte() || t.offset == layout.lm_head())
            count = static_cast<std::size_t>(config.vocab_size) * config.channels;  // padded rows stay 0
        fill_normal(rng, p, count, 0.02f);
    }
    return host;
}

RopeTables rope_tables(const ModelConfig& config) {
    const int hs = head_size(config), half = hs / 2, T = config.max_seq_len;
    std::vector<double> inv_freq(half);
    const RopeScaling& s = config.rope_scaling;
    for (int i = 0; i < half; ++i) {
        // HF computes θ^(2i/hs) in fp32.
        const float base = std::pow(config.rope_theta, static_cast<float>(2 * i) / static_cast<float>(hs));
        double f = 1.0 / static_cast<double>(base);
        if (s.factor != 0.0f) {
            const double pi = 3.14159265358979323846;
            const double wavelen = 2.0 * pi / f;
            const double low_wavelen = s.original_max_position / static_cast<double>(s.low_freq_factor);
            const double high_wavelen = s.original_max_position / static_cast<double>(s.high_freq_factor);
            if (wavelen > low_wavelen) {
                f /= s.factor;  // long wavelengths: fully scaled
            } else if (wavelen >= high_wavelen) {  // in between: interpolated
                const double smooth = (s.original_max_position / wavelen - s.low_freq_factor) /
                                      (static_cast<double>(s.high_freq_factor) - s.low_freq_factor);
                f = (1.0 - smooth) * f / s.factor + smooth * f;
            }
        }
        inv_freq[i] = static_cast<float>(f);
    }
    RopeTables tables;
    tables.cos.resize(static_cast<std::size_t>(T) * half);
    tables.sin.resize(tables.cos.size());
    for (int t = 0; t < T; ++t)
        for (int i = 0; i < half; ++i) {
            const float angle = static_cast<float>(t) * static_cast<float>(inv_freq[i]);  // fp32, as HF
            tables.cos[static_cast<std::size_t>(t) * half + i] = std::cos(angle);
            tables.sin[static_cast<std::size_t>(t) * half + i] = std::sin(angle);
        }
    return tables;
}

// Activation buffers for a capacity of (B, T); per-layer arrays hold L pointers.
struct Llama::Activations {
    int B = 0, T = 0;          // capacity
    float* encoded = nullptr;  // (N,C)
    std::vector<float*> ln1, ln1_rstd, qkvr, atty, att, residual2, ln2, ln2_rstd, fch, fch_swiglu, residual3;
    float* lnf = nullptr;       // (N,C)
    float* lnf_rstd = nullptr;  // (N)
    float* scratch = nullptr;   // (N, max(QKV, C)): q, k, v before rope, or a projection before its residual add
    // backward scratch
    float* dresidual = nullptr;    // (N,C)
    float* dln = nullptr;          // (N,C): d of a norm's output, or of atty
    float* dqkv = nullptr;         // (N,QKV) before rope
    float* dqkvr = nullptr;        // (N,QKV) after rope
    float* dfch = nullptr;         // (N,2F)
    float* dfch_swiglu = nullptr;  // (N,F)
    float* datt = nullptr;         // (B,NH,T,T)
};

Llama::Llama(const ModelConfig& config, Backend& backend, ParamStore* store) : Transformer(config, backend, store) {
    upload_rope_tables();
}

Llama::Llama(const ModelConfig& config, std::unique_ptr<Backend> backend) : Transformer(config, std::move(backend)) {
    upload_rope_tables();
}

Llama::~Llama() {
    backend_.free(rope_cos_);
    backend_.free(rope_sin_);
}

void Llama::upload_rope_tables() {
    if (config_.family != ModelFamily::llama)
        throw Error("Llama built for a " + std::string(family_name(config_.family)) + " config");
    const RopeTables tables = rope_tables(config_);
    const std::size_t bytes = tables.cos.size() * sizeof(float);
    rope_cos_ = static_cast<float*>(backend_.alloc(bytes));
    rope_sin_ = static_cast<float*>(backend_.alloc(bytes));
    backend_.upload(rope_cos_, tables.cos.data(), bytes);
    backend_.upload(rope_sin_, tables.sin.data(), bytes);
}

void Llama::ensure_activations(int B, int T) {
    if (acts_ != nullptr && !owned_.empty() && B <= acts_->B && T <= acts_->T) return;  // (empty: freed by set_recompute)
    free_activations();
    acts_ = std::make_unique<Activations>();
    Activations& a = *acts_;
    a.B = B;
    a.T = T;
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels, NH = config_.num_heads;
    const std::size_t F = config_.ffn_hidden, QKV = qkv_channels(config_);
    alloc_io(N);
    a.encoded = alloc_floats(N * C);
    const bool block = recompute_ == Recompute::block, attn = recompute_ != Recompute::none;  // shared sets
    a.ln1 = alloc_per_layer(N * C, block);
    a.ln1_rstd = alloc_per_layer(N, block);
    a.qkvr = alloc_per_layer(N * QKV, block);
    a.atty = alloc_per_layer(N * C, attn);
    a.att = alloc_per_layer(B * NH * T * T, attn);
    a.residual2 = alloc_per_layer(N * C, block);
    a.ln2 = alloc_per_layer(N * C, block);
    a.ln2_rstd = alloc_per_layer(N, block);
    a.fch = alloc_per_layer(N * 2 * F, block);
    a.fch_swiglu = alloc_per_layer(N * F, block);
    a.residual3 = alloc_per_layer(N * C);  // the next block's input
    a.lnf = alloc_floats(N * C);
    a.lnf_rstd = alloc_floats(N);
    a.scratch = alloc_scratch(N * std::max(QKV, C));
    a.dresidual = alloc_scratch(N * C);
    a.dln = alloc_scratch(N * C);
    a.dqkv = alloc_scratch(N * QKV);
    a.dqkvr = alloc_scratch(N * QKV);
    a.dfch = alloc_scratch(N * 2 * F);
    a.dfch_swiglu = alloc_scratch(N * F);
    a.datt = alloc_scratch(B * NH * T * T);
}

float Llama::forward(const int* inputs, const int* targets, int B, int T) {
    begin_forward(inputs, targets, B, T);
    Activations& a = *acts_;
    const int N = B * T, C = config_.channels;
    const int L = config_.num_layers, Vp = config_.padded_vocab_size, F = config_.ffn_hidden;
    const float eps = config_.norm_eps;
    const std::size_t NC = static_cast<std::size_t>(N) * C;

    // Globals (unit L) stay acquired for the whole pass: the embedding and the classifier.
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    backend_.encoder_forward(a.encoded, inputs_, gp, nullptr, B, T, C);
    for (int l = 0; l < L; ++l) {
        const BlockOffsets& o = layout_.block(l);
        const std::size_t b0 = layout_.block_begin(l);
        const float* bp = store_->params(l);
        auto P = [&](std::size_t offset) { return bp + (offset - b0); };
        block_forward(l, bp, b0);
        backend_.matmul_forward(a.scratch, a.fch_swiglu[l], P(o.fcprojw), nullptr, N, F, C);
        backend_.residual_forward(a.residual3[l], a.residual2[l], a.scratch, NC);
        store_->params_done(l);
    }
    const float* last = L > 0 ? a.residual3[L - 1] : a.encoded;
    backend_.rmsnorm_forward(a.lnf, a.lnf_rstd, last, gp + (layout_.lnfw() - g0), eps, N, C);
    backend_.matmul_forward(logits_, a.lnf, gp + (layout_.lm_head() - g0), nullptr, N, C, Vp);
    store_->params_done(L);
    return finish_forward();
}

void Llama::block_forward(int l, const float* bp, std::size_t b0) {
    Activations& a = *acts_;
    const int B = B_, T = T_, N = B * T, C = config_.channels, NH = config_.num_heads, KV = config_.num_kv_heads;
    const int F = config_.ffn_hidden, QKV = qkv_channels(config_), hs = head_size(config_);
    const float eps = config_.norm_eps;
    const BlockOffsets& o = layout_.block(l);
    auto P = [&](std::size_t offset) { return bp + (offset - b0); };
    const float* residual = l == 0 ? a.encoded : a.residual3[l - 1];
    backend_.rmsnorm_forward(a.ln1[l], a.ln1_rstd[l], residual, P(o.ln1w), eps, N, C);
    backend_.matmul_forward(a.scratch, a.ln1[l], P(o.qkvw), nullptr, N, C, QKV);
    backend_.rope_forward(a.qkvr[l], a.scratch, rope_cos_, rope_sin_, B, T, NH, KV, hs);
    backend_.attention_forward(a.atty[l], a.att[l], a.qkvr[l], B, T, C, NH, KV);
    backend_.matmul_forward(a.scratch, a.atty[l], P(o.attprojw), nullptr, N, C, C);
    backend_.residual_forward(a.residual2[l], residual, a.scratch, static_cast<std::size_t>(N) * C);
    backend_.rmsnorm_forward(a.ln2[l], a.ln2_rstd[l], a.residual2[l], P(o.ln2w), eps, N, C);
    backend_.matmul_forward(a.fch[l], a.ln2[l], P(o.fcw), nullptr, N, C, 2 * F);
    backend_.swiglu_forward(a.fch_swiglu[l], a.fch[l], N, F);
}

void Llama::recompute(int l, const float* bp, std::size_t b0) {
    Activations& a = *acts_;
    if (recompute_ == Recompute::attention)
        backend_.attention_forward(a.atty[l], a.att[l], a.qkvr[l], B_, T_, config_.channels, config_.num_heads,
                                   config_.num_kv_heads);
    else if (recompute_ == Recompute::block)
        block_forward(l, bp, b0);
}

void Llama::backward(float loss_scale) {
    begin_backward(loss_scale);
    Activations& a = *acts_;
    const int B = B_, T = T_, N = B * T, C = config_.channels, NH = config_.num_heads, KV = config_.num_kv_heads;
    const int L = config_.num_layers, Vp = config_.padded_vocab_size, F = config_.ffn_hidden;
    const int QKV = qkv_channels(config_), hs = head_size(config_);
    const std::size_t NC = static_cast<std::size_t>(N) * C, NF = static_cast<std::size_t>(N) * F;
    const std::size_t NQKV = static_cast<std::size_t>(N) * QKV;
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    float* gg = store_->grads(L);

    backend_.zero(a.dln, NC);
    backend_.matmul_backward(a.dln, gg + (layout_.lm_head() - g0), nullptr, logits_, a.lnf,
                             gp + (layout_.lm_head() - g0), N, C, Vp);
    backend_.zero(a.dresidual, NC);
    const float* last = L > 0 ? a.residual3[L - 1] : a.encoded;
    backend_.rmsnorm_backward(a.dresidual, gg + (layout_.lnfw() - g0), a.dln, last, gp + (layout_.lnfw() - g0),
                              a.lnf_rstd, N, C);
    for (int l = L - 1; l >= 0; --l) {
        const BlockOffsets& o = layout_.block(l);
        const std::size_t b0 = layout_.block_begin(l);
        const float* bp = store_->params(l);
        float* bg = store_->grads(l);
        auto P = [&](std::size_t offset) { return bp + (offset - b0); };
        auto G = [&](std::size_t offset) { return bg + (offset - b0); };
        const float* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        recompute(l, bp, b0);
        // residual3 = residual2 + fcproj(swiglu(fc(ln2(residual2)))); dresidual flows through unchanged.
        backend_.zero(a.dfch_swiglu, NF);
        backend_.matmul_backward(a.dfch_swiglu, G(o.fcprojw), nullptr, a.dresidual, a.fch_swiglu[l], P(o.fcprojw), N,
                                 F, C);
        backend_.zero(a.dfch, 2 * NF);
        backend_.swiglu_backward(a.dfch, a.fch[l], a.dfch_swiglu, N, F);
        backend_.zero(a.dln, NC);
        backend_.matmul_backward(a.dln, G(o.fcw), nullptr, a.dfch, a.ln2[l], P(o.fcw), N, C, 2 * F);
        backend_.rmsnorm_backward(a.dresidual, G(o.ln2w), a.dln, a.residual2[l], P(o.ln2w), a.ln2_rstd[l], N, C);
        // residual2 = residual + attproj(attention(rope(qkv(ln1(residual))))).
        backend_.zero(a.dln, NC);  // now d(atty)
        backend_.matmul_backward(a.dln, G(o.attprojw), nullptr, a.dresidual, a.atty[l], P(o.attprojw), N, C, C);
        backend_.zero(a.dqkvr, NQKV);
        backend_.attention_backward(a.dqkvr, a.datt, a.dln, a.qkvr[l], a.att[l], B, T, C, NH, KV);
        backend_.zero(a.dqkv, NQKV);
        backend_.rope_backward(a.dqkv, a.dqkvr, rope_cos_, rope_sin_, B, T, NH, KV, hs);
        backend_.zero(a.dln, NC);  // now d(ln1)
        backend_.matmul_backward(a.dln, G(o.qkvw), nullptr, a.dqkv, a.ln1[l], P(o.qkvw), N, C, QKV);
        backend_.rmsnorm_backward(a.dresidual, G(o.ln1w), a.dln, residual, P(o.ln1w), a.ln1_rstd[l], N, C);
        store_->params_done(l);
        store_->grads_done(l);
    }
    backend_.encoder_backward(gg, nullptr, a.dresidual, inputs_, B, T, C);
    store_->params_done(L);
    store_->grads_done(L);
}

}  // namespace arch
