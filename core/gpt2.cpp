// core/gpt2.cpp: the GPT-2 forward and backward passes as a sequence of Backend ops (llm.c's order).
// Backward keeps one running gradient of the residual stream (dresidual) and per-layer scratch
// buffers that are zeroed before use, since every backward op accumulates.
#include "core/gpt2.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace arch {

// Activation buffers for a capacity of (B, T); per-layer arrays hold L pointers.
struct GPT2::Activations {
    int B = 0, T = 0;  // capacity
    float* encoded = nullptr;  // (N,C)
    std::vector<float*> ln1, ln1_mean, ln1_rstd, qkv, atty, att, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu,
        residual3;
    float* lnf = nullptr;  // (N,C)
    float* lnf_mean = nullptr;
    float* lnf_rstd = nullptr;
    float* scratch = nullptr;  // (N, 4C): the output of a projection before its residual add
    // backward scratch
    float* dresidual = nullptr;  // (N,C)
    float* dlnf = nullptr;       // (N,C), reused as dln1/dln2/datty
    float* dqkv = nullptr;       // (N,3C)
    float* dfch = nullptr;       // (N,4C)
    float* dfch_gelu = nullptr;  // (N,4C)
    float* datt = nullptr;       // (B,NH,T,T)
};

GPT2::GPT2(const ModelConfig& config, Backend& backend, ParamStore* store) : Transformer(config, backend, store) {
    if (config.family != ModelFamily::gpt2) throw Error("GPT2 built for a " + std::string(family_name(config.family)) + " config");
}

GPT2::GPT2(const ModelConfig& config, std::unique_ptr<Backend> backend) : Transformer(config, std::move(backend)) {
    if (config.family != ModelFamily::gpt2) throw Error("GPT2 built for a " + std::string(family_name(config.family)) + " config");
}

GPT2::~GPT2() = default;

std::vector<float> gpt2_init_params(const ModelConfig& config, uint64_t seed) {
    const ParamLayout layout(config);
    std::vector<float> host(layout.num_params(), 0.0f);
    Rng rng(seed);
    const float residual_std = 0.02f / std::sqrt(2.0f * config.num_layers);
    for (const TensorView& t : layout.tensors()) {
        float* p = host.data() + t.offset;
        const std::string kind = t.name.substr(t.name.find('.') + 1);  // "qkvw" from "h3.qkvw"
        if (kind == "ln1w" || kind == "ln2w" || kind == "lnfw") {
            for (std::size_t i = 0; i < t.size; ++i) p[i] = 1.0f;
        } else if (t.shape.size() >= 2) {
            const float std = (kind == "attprojw" || kind == "fcprojw") ? residual_std : 0.02f;
            std::size_t count = t.size;
            if (kind == "wte") count = static_cast<std::size_t>(config.vocab_size) * config.channels;
            fill_normal(rng, p, count, std);
        }
    }
    return host;
}

void GPT2::ensure_activations(int B, int T) {
    if (acts_ != nullptr && !owned_.empty() && B <= acts_->B && T <= acts_->T) return;  // (empty: freed by set_recompute)
    free_activations();
    acts_ = std::make_unique<Activations>();
    Activations& a = *acts_;
    a.B = B;
    a.T = T;
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels, NH = config_.num_heads;
    alloc_io(N);
    a.encoded = alloc_floats(N * C);
    const bool block = recompute_ == Recompute::block, attn = recompute_ != Recompute::none;  // shared sets
    a.ln1 = alloc_per_layer(N * C, block);
    a.ln1_mean = alloc_per_layer(N, block);
    a.ln1_rstd = alloc_per_layer(N, block);
    a.qkv = alloc_per_layer(N * 3 * C, block);
    a.atty = alloc_per_layer(N * C, attn);
    a.att = alloc_per_layer(B * NH * T * T, attn);
    a.residual2 = alloc_per_layer(N * C, block);
    a.ln2 = alloc_per_layer(N * C, block);
    a.ln2_mean = alloc_per_layer(N, block);
    a.ln2_rstd = alloc_per_layer(N, block);
    a.fch = alloc_per_layer(N * 4 * C, block);
    a.fch_gelu = alloc_per_layer(N * 4 * C, block);
    a.residual3 = alloc_per_layer(N * C);  // the next block's input
    a.lnf = alloc_floats(N * C);
    a.lnf_mean = alloc_floats(N);
    a.lnf_rstd = alloc_floats(N);
    a.scratch = alloc_scratch(N * 4 * C);
    a.dresidual = alloc_scratch(N * C);
    a.dlnf = alloc_scratch(N * C);
    a.dqkv = alloc_scratch(N * 3 * C);
    a.dfch = alloc_scratch(N * 4 * C);
    a.dfch_gelu = alloc_scratch(N * 4 * C);
    a.datt = alloc_scratch(B * NH * T * T);
}

float GPT2::forward(const int* inputs, const int* targets, int B, int T) {
    begin_forward(inputs, targets, B, T);
    Activations& a = *acts_;
    const int N = B * T;
    const int C = config_.channels, L = config_.num_layers, Vp = config_.padded_vocab_size;

    // Globals (unit L) stay acquired for the whole pass: the encoder and the classifier both use wte.
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    backend_.encoder_forward(a.encoded, inputs_, gp + (layout_.wte() - g0), gp + (layout_.wpe() - g0), B, T, C);
    for (int l = 0; l < L; ++l) {
        const BlockOffsets& o = layout_.block(l);
        const std::size_t b0 = layout_.block_begin(l);
        const float* bp = store_->params(l);
        auto P = [&](std::size_t offset) { return bp + (offset - b0); };
        block_forward(l, bp, b0);
        backend_.matmul_forward(a.scratch, a.fch_gelu[l], P(o.fcprojw), P(o.fcprojb), N, 4 * C, C);
        backend_.residual_forward(a.residual3[l], a.residual2[l], a.scratch, static_cast<std::size_t>(N) * C);
        store_->params_done(l);
    }
    const float* last = L > 0 ? a.residual3[L - 1] : a.encoded;
    backend_.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, gp + (layout_.lnfw() - g0),
                               gp + (layout_.lnfb() - g0), N, C);
    backend_.matmul_forward(logits_, a.lnf, gp + (layout_.wte() - g0), nullptr, N, C, Vp);
    store_->params_done(L);
    return finish_forward();
}

void GPT2::block_forward(int l, const float* bp, std::size_t b0) {
    Activations& a = *acts_;
    const int B = B_, T = T_, N = B * T, C = config_.channels, NH = config_.num_heads;
    const BlockOffsets& o = layout_.block(l);
    auto P = [&](std::size_t offset) { return bp + (offset - b0); };
    const float* residual = l == 0 ? a.encoded : a.residual3[l - 1];
    backend_.layernorm_forward(a.ln1[l], a.ln1_mean[l], a.ln1_rstd[l], residual, P(o.ln1w), P(o.ln1b), N, C);
    backend_.matmul_forward(a.qkv[l], a.ln1[l], P(o.qkvw), P(o.qkvb), N, C, 3 * C);
    backend_.attention_forward(a.atty[l], a.att[l], a.qkv[l], B, T, C, NH, NH);
    backend_.matmul_forward(a.scratch, a.atty[l], P(o.attprojw), P(o.attprojb), N, C, C);
    backend_.residual_forward(a.residual2[l], residual, a.scratch, static_cast<std::size_t>(N) * C);
    backend_.layernorm_forward(a.ln2[l], a.ln2_mean[l], a.ln2_rstd[l], a.residual2[l], P(o.ln2w), P(o.ln2b), N, C);
    backend_.matmul_forward(a.fch[l], a.ln2[l], P(o.fcw), P(o.fcb), N, C, 4 * C);
    backend_.gelu_forward(a.fch_gelu[l], a.fch[l], static_cast<std::size_t>(N) * 4 * C);
}

void GPT2::recompute(int l, const float* bp, std::size_t b0) {
    Activations& a = *acts_;
    if (recompute_ == Recompute::attention)
        backend_.attention_forward(a.atty[l], a.att[l], a.qkv[l], B_, T_, config_.channels, config_.num_heads,
                                   config_.num_heads);
    else if (recompute_ == Recompute::block)
        block_forward(l, bp, b0);
}

void GPT2::backward(float loss_scale) {
    begin_backward(loss_scale);
    Activations& a = *acts_;
    const int B = B_, T = T_, N = B * T;
    const int C = config_.channels, NH = config_.num_heads, L = config_.num_layers;
    const int Vp = config_.padded_vocab_size;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    float* gg = store_->grads(L);

    backend_.zero(a.dlnf, NC);
    backend_.matmul_backward(a.dlnf, gg + (layout_.wte() - g0), nullptr, logits_, a.lnf, gp + (layout_.wte() - g0),
                             N, C, Vp);
    backend_.zero(a.dresidual, NC);
    const float* last = L > 0 ? a.residual3[L - 1] : a.encoded;
    backend_.layernorm_backward(a.dresidual, gg + (layout_.lnfw() - g0), gg + (layout_.lnfb() - g0), a.dlnf, last,
                                gp + (layout_.lnfw() - g0), a.lnf_mean, a.lnf_rstd, N, C);

    float* dln = a.dlnf;  // (N,C) scratch reused per layer
    for (int l = L - 1; l >= 0; --l) {
        const BlockOffsets& o = layout_.block(l);
        const std::size_t b0 = layout_.block_begin(l);
        const float* bp = store_->params(l);
        float* bg = store_->grads(l);
        auto P = [&](std::size_t offset) { return bp + (offset - b0); };
        auto G = [&](std::size_t offset) { return bg + (offset - b0); };
        const float* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        recompute(l, bp, b0);
        // residual3 = residual2 + fcproj(gelu(fc(ln2(residual2)))); dresidual flows through unchanged.
        backend_.zero(a.dfch_gelu, NC * 4);
        backend_.matmul_backward(a.dfch_gelu, G(o.fcprojw), G(o.fcprojb), a.dresidual, a.fch_gelu[l], P(o.fcprojw), N,
                                 4 * C, C);
        backend_.zero(a.dfch, NC * 4);
        backend_.gelu_backward(a.dfch, a.fch[l], a.dfch_gelu, NC * 4);
        backend_.zero(dln, NC);
        backend_.matmul_backward(dln, G(o.fcw), G(o.fcb), a.dfch, a.ln2[l], P(o.fcw), N, C, 4 * C);
        backend_.layernorm_backward(a.dresidual, G(o.ln2w), G(o.ln2b), dln, a.residual2[l], P(o.ln2w), a.ln2_mean[l],
                                    a.ln2_rstd[l], N, C);
        // residual2 = residual + attproj(attention(qkv(ln1(residual)))).
        backend_.zero(dln, NC);  // now d(atty)
        backend_.matmul_backward(dln, G(o.attprojw), G(o.attprojb), a.dresidual, a.atty[l], P(o.attprojw), N, C, C);
        backend_.zero(a.dqkv, NC * 3);
        backend_.attention_backward(a.dqkv, a.datt, dln, a.qkv[l], a.att[l], B, T, C, NH, NH);
        backend_.zero(dln, NC);  // now d(ln1)
        backend_.matmul_backward(dln, G(o.qkvw), G(o.qkvb), a.dqkv, a.ln1[l], P(o.qkvw), N, C, 3 * C);
        backend_.layernorm_backward(a.dresidual, G(o.ln1w), G(o.ln1b), dln, residual, P(o.ln1w), a.ln1_mean[l],
                                    a.ln1_rstd[l], N, C);
        store_->params_done(l);
        store_->grads_done(l);
    }
    backend_.encoder_backward(gg + (layout_.wte() - g0), gg + (layout_.wpe() - g0), a.dresidual, inputs_, B, T, C);
    store_->params_done(L);
    store_->grads_done(L);
}

}  // namespace arch
