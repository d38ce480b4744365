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
    int* inputs = nullptr;
    int* targets = nullptr;
    float* encoded = nullptr;  // (N,C)
    std::vector<float*> ln1, ln1_mean, ln1_rstd, qkv, atty, att, residual2, ln2, ln2_mean, ln2_rstd, fch, fch_gelu,
        residual3;
    float* lnf = nullptr;  // (N,C)
    float* lnf_mean = nullptr;
    float* lnf_rstd = nullptr;
    float* logits = nullptr;  // (N,Vp), becomes dlogits in backward
    float* losses = nullptr;  // (N)
    float* scratch = nullptr;  // (N, 4C): the output of a projection before its residual add
    // backward scratch
    float* dresidual = nullptr;  // (N,C)
    float* dlnf = nullptr;       // (N,C), reused as dln1/dln2/datty
    float* dqkv = nullptr;       // (N,3C)
    float* dfch = nullptr;       // (N,4C)
    float* dfch_gelu = nullptr;  // (N,4C)
    float* datt = nullptr;       // (B,NH,T,T)
};

GPT2::GPT2(const ModelConfig& config, Backend& backend, ParamStore* store)
    : config_(config), layout_((validate(config), config)), backend_(backend), store_(store) {
    if (store_ == nullptr) {
        own_store_ = std::make_unique<FlatParamStore>(layout_, backend_);
        store_ = own_store_.get();
    }
}

GPT2::GPT2(const ModelConfig& config, std::unique_ptr<Backend> backend)
    : config_(config), layout_((validate(config), config)), own_backend_(std::move(backend)), backend_(*own_backend_) {
    own_store_ = std::make_unique<FlatParamStore>(layout_, backend_);
    store_ = own_store_.get();
}

namespace {
FlatParamStore& flat(ParamStore* store) {
    auto* f = dynamic_cast<FlatParamStore*>(store);
    if (f == nullptr) throw Error("GPT2: whole parameter buffers exist only with a FlatParamStore");
    return *f;
}
}  // namespace

float* GPT2::params() { return flat(store_).all_params(); }
float* GPT2::grads() { return flat(store_).all_grads(); }

GPT2::~GPT2() {
    adamw_.reset();
    for (void* p : owned_) backend_.free(p);
    delete acts_;
    own_store_.reset();  // before the backend it lives in
}

AdamW& GPT2::adamw() {
    flat(store_);  // throws for a sharded store
    if (!adamw_) adamw_ = std::make_unique<AdamW>(layout_, backend_);
    return *adamw_;
}

float GPT2::adamw_step(float lr, const AdamWConfig& config) { return adamw().step(params(), grads(), lr, config); }

void GPT2::get_adamw_state(std::span<float> m, std::span<float> v) const {
    if (!adamw_) {  // no step taken yet: the state is zero
        if (m.size() != layout_.num_params() || v.size() != layout_.num_params())
            throw Error("get_adamw_state: wrong buffer size");
        std::fill(m.begin(), m.end(), 0.0f);
        std::fill(v.begin(), v.end(), 0.0f);
        return;
    }
    adamw_->get_state(m, v);
}

DeviceMemory GPT2::memory() const {
    DeviceMemory m;
    m.params_bytes = m.grads_bytes = layout_.num_params() * sizeof(float);
    m.optimizer_bytes = 2 * m.params_bytes;
    return m;
}

void GPT2::set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) {
    adamw().set_state(m, v, steps);
}

float* GPT2::alloc_floats(std::size_t n) {
    void* p = backend_.alloc(n * sizeof(float));
    owned_.push_back(p);
    return static_cast<float*>(p);
}

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
            for (std::size_t i = 0; i < count; ++i) p[i] = std * rng.normal();
        }
    }
    return host;
}

void GPT2::init_weights(uint64_t seed) { set_params(gpt2_init_params(config_, seed)); }

void GPT2::set_params(std::span<const float> host) {
    if (host.size() != layout_.num_params())
        throw Error("set_params: expected " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(host.size()));
    backend_.upload(params(), host.data(), host.size_bytes());
}

void GPT2::get_params(std::span<float> host) {
    if (host.size() != layout_.num_params()) throw Error("get_params: wrong buffer size");
    backend_.download(host.data(), params(), host.size_bytes());
}

void GPT2::get_grads(std::span<float> host) {
    if (host.size() != layout_.num_params()) throw Error("get_grads: wrong buffer size");
    backend_.download(host.data(), grads(), host.size_bytes());
}

void GPT2::ensure_activations(int B, int T) {
    if (acts_ != nullptr && B <= acts_->B && T <= acts_->T) return;
    if (acts_ != nullptr) {
        for (void* p : owned_) backend_.free(p);
        owned_.clear();
        delete acts_;
    }
    acts_ = new Activations();
    Activations& a = *acts_;
    a.B = B;
    a.T = T;
    const std::size_t N = static_cast<std::size_t>(B) * T, C = config_.channels, L = config_.num_layers;
    const std::size_t NH = config_.num_heads, Vp = config_.padded_vocab_size;
    a.inputs = static_cast<int*>(backend_.alloc(N * sizeof(int)));
    owned_.push_back(a.inputs);
    a.targets = static_cast<int*>(backend_.alloc(N * sizeof(int)));
    owned_.push_back(a.targets);
    a.encoded = alloc_floats(N * C);
    auto per_layer = [&](std::vector<float*>& v, std::size_t n) {
        v.resize(L);
        for (auto& p : v) p = alloc_floats(n);
    };
    per_layer(a.ln1, N * C);
    per_layer(a.ln1_mean, N);
    per_layer(a.ln1_rstd, N);
    per_layer(a.qkv, N * 3 * C);
    per_layer(a.atty, N * C);
    per_layer(a.att, B * NH * T * T);
    per_layer(a.residual2, N * C);
    per_layer(a.ln2, N * C);
    per_layer(a.ln2_mean, N);
    per_layer(a.ln2_rstd, N);
    per_layer(a.fch, N * 4 * C);
    per_layer(a.fch_gelu, N * 4 * C);
    per_layer(a.residual3, N * C);
    a.lnf = alloc_floats(N * C);
    a.lnf_mean = alloc_floats(N);
    a.lnf_rstd = alloc_floats(N);
    a.logits = alloc_floats(N * Vp);
    a.losses = alloc_floats(N);
    a.scratch = alloc_floats(N * 4 * C);
    a.dresidual = alloc_floats(N * C);
    a.dlnf = alloc_floats(N * C);
    a.dqkv = alloc_floats(N * 3 * C);
    a.dfch = alloc_floats(N * 4 * C);
    a.dfch_gelu = alloc_floats(N * 4 * C);
    a.datt = alloc_floats(B * NH * T * T);
}

void check_batch(const ModelConfig& config, const int* inputs, const int* targets, int B, int T) {
    if (B <= 0 || T <= 0) throw Error("forward: batch B=" + std::to_string(B) + " and T=" + std::to_string(T) + " must be positive");
    if (T > config.max_seq_len)
        throw Error("sequence length T=" + std::to_string(T) + " exceeds the model's max T=" +
                    std::to_string(config.max_seq_len));
    const int N = B * T, V = config.vocab_size;
    auto check_ids = [&](const int* ids, const char* what) {
        for (int i = 0; i < N; ++i)
            if (ids[i] < 0 || ids[i] >= V)
                throw Error(std::string(what) + " token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                            " is outside the vocabulary [0, " + std::to_string(V) + ")");
    };
    check_ids(inputs, "input");
    if (targets != nullptr) check_ids(targets, "target");
}

float GPT2::forward(const int* inputs, const int* targets, int B, int T) {
    check_batch(config_, inputs, targets, B, T);
    const int N = B * T, V = config_.vocab_size;
    ensure_activations(B, T);
    B_ = B;
    T_ = T;
    Activations& a = *acts_;
    const int C = config_.channels, NH = config_.num_heads, L = config_.num_layers, Vp = config_.padded_vocab_size;
    backend_.upload(a.inputs, inputs, N * sizeof(int));
    if (targets != nullptr) backend_.upload(a.targets, targets, N * sizeof(int));

    // Globals (unit L) stay acquired for the whole pass: the encoder and the classifier both use wte.
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    backend_.encoder_forward(a.encoded, a.inputs, gp + (layout_.wte() - g0), gp + (layout_.wpe() - g0), B, T, C);
    for (int l = 0; l < L; ++l) {
        const BlockOffsets& o = layout_.block(l);
        const std::size_t b0 = layout_.block_begin(l);
        const float* bp = store_->params(l);
        auto P = [&](std::size_t offset) { return bp + (offset - b0); };
        const float* residual = l == 0 ? a.encoded : a.residual3[l - 1];
        backend_.layernorm_forward(a.ln1[l], a.ln1_mean[l], a.ln1_rstd[l], residual, P(o.ln1w), P(o.ln1b), N, C);
        backend_.matmul_forward(a.qkv[l], a.ln1[l], P(o.qkvw), P(o.qkvb), N, C, 3 * C);
        backend_.attention_forward(a.atty[l], a.att[l], a.qkv[l], B, T, C, NH);
        backend_.matmul_forward(a.scratch, a.atty[l], P(o.attprojw), P(o.attprojb), N, C, C);
        backend_.residual_forward(a.residual2[l], residual, a.scratch, static_cast<std::size_t>(N) * C);
        backend_.layernorm_forward(a.ln2[l], a.ln2_mean[l], a.ln2_rstd[l], a.residual2[l], P(o.ln2w), P(o.ln2b), N,
                                   C);
        backend_.matmul_forward(a.fch[l], a.ln2[l], P(o.fcw), P(o.fcb), N, C, 4 * C);
        backend_.gelu_forward(a.fch_gelu[l], a.fch[l], static_cast<std::size_t>(N) * 4 * C);
        backend_.matmul_forward(a.scratch, a.fch_gelu[l], P(o.fcprojw), P(o.fcprojb), N, 4 * C, C);
        backend_.residual_forward(a.residual3[l], a.residual2[l], a.scratch, static_cast<std::size_t>(N) * C);
        store_->params_done(l);
    }
    const float* last = L > 0 ? a.residual3[L - 1] : a.encoded;
    backend_.layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, gp + (layout_.lnfw() - g0),
                               gp + (layout_.lnfb() - g0), N, C);
    backend_.matmul_forward(a.logits, a.lnf, gp + (layout_.wte() - g0), nullptr, N, C, Vp);
    store_->params_done(L);
    logits_valid_ = true;
    have_targets_ = targets != nullptr;
    if (!have_targets_) return 0.0f;

    backend_.crossentropy_forward(a.losses, a.logits, a.targets, N, V, Vp);
    std::vector<float> losses(N);
    backend_.download(losses.data(), a.losses, N * sizeof(float));
    double sum = 0.0;
    for (float x : losses) sum += x;
    return static_cast<float>(sum / N);
}

void GPT2::backward(float loss_scale) {
    if (!have_targets_ || !logits_valid_) throw Error("backward: needs a forward pass with targets first");
    Activations& a = *acts_;
    const int B = B_, T = T_, N = B * T;
    const int C = config_.channels, NH = config_.num_heads, L = config_.num_layers;
    const int V = config_.vocab_size, Vp = config_.padded_vocab_size;
    const std::size_t NC = static_cast<std::size_t>(N) * C;
    const std::size_t g0 = layout_.wte();
    const float* gp = store_->params(L);
    float* gg = store_->grads(L);

    backend_.crossentropy_backward(a.logits, a.targets, loss_scale / N, N, V, Vp);  // logits -> dlogits
    logits_valid_ = false;
    backend_.zero(a.dlnf, NC);
    backend_.matmul_backward(a.dlnf, gg + (layout_.wte() - g0), nullptr, a.logits, a.lnf, gp + (layout_.wte() - g0),
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
        backend_.attention_backward(a.dqkv, a.datt, dln, a.qkv[l], a.att[l], B, T, C, NH);
        backend_.zero(dln, NC);  // now d(ln1)
        backend_.matmul_backward(dln, G(o.qkvw), G(o.qkvb), a.dqkv, a.ln1[l], P(o.qkvw), N, C, 3 * C);
        backend_.layernorm_backward(a.dresidual, G(o.ln1w), G(o.ln1b), dln, residual, P(o.ln1w), a.ln1_mean[l],
                                    a.ln1_rstd[l], N, C);
        store_->params_done(l);
        store_->grads_done(l);
    }
    backend_.encoder_backward(gg + (layout_.wte() - g0), gg + (layout_.wpe() - g0), a.dresidual, a.inputs, B, T, C);
    store_->params_done(L);
    store_->grads_done(L);
    have_targets_ = false;
}

std::vector<float> GPT2::logits_at(int b, int t) const {
    if (!logits_valid_ || b < 0 || b >= B_ || t < 0 || t >= T_) throw Error("logits_at: no logits for that position");
    std::vector<float> row(config_.vocab_size);
    const std::size_t offset = (static_cast<std::size_t>(b) * T_ + t) * config_.padded_vocab_size;
    backend_.download(row.data(), acts_->logits + offset, row.size() * sizeof(float));
    return row;
}

}  // namespace arch
