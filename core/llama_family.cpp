// core/llama_family.cpp: the Llama family's registration (core/model_family.h): rotary positions,
// RMSNorm, grouped-query attention, a SwiGLU MLP F wide, no biases, tied or untied lm_head;
// safetensors checkpoints, HF's LlamaForCausalLM folder.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/checkpoint_safetensors.h"
#include "core/error.h"
#include "core/hf_export.h"
#include "core/hf_import.h"
#include "core/llama.h"
#include "core/model_family.h"

namespace arch {
namespace {

void validate_llama(const ModelConfig& c) {
    auto positive = [](const char* what, int v) {
        if (v <= 0) throw Error(std::string("model config: ") + what + " must be positive, got " + std::to_string(v));
    };
    positive("KV heads", c.num_kv_heads);
    positive("MLP width (F)", c.ffn_hidden);
    if (c.num_heads % c.num_kv_heads != 0)
        throw Error("model config: KV heads " + std::to_string(c.num_kv_heads) + " do not divide heads NH=" +
                    std::to_string(c.num_heads));
    if (head_size(c) % 2 != 0)
        throw Error("model config: rotary embeddings need an even head size, got " + std::to_string(head_size(c)));
    if (!(c.rope_theta > 0.0f) || !std::isfinite(c.rope_theta))
        throw Error("model config: rope_theta must be positive, got " + std::to_string(c.rope_theta));
    if (!(c.norm_eps > 0.0f) || !std::isfinite(c.norm_eps))
        throw Error("model config: the RMSNorm epsilon must be positive, got " + std::to_string(c.norm_eps));
    const RopeScaling& s = c.rope_scaling;
    if (s.factor != 0.0f &&
        (!(s.factor >= 1.0f) || !(s.high_freq_factor > s.low_freq_factor) || s.original_max_position <= 0))
        throw Error("model config: rope scaling needs factor >= 1, high_freq_factor > low_freq_factor and a "
                    "positive original_max_position_embeddings");
}

std::string describe(const ModelConfig& c, const std::string& tail) {
    char extra[160];
    std::snprintf(extra, sizeof extra, " rope %g", static_cast<double>(c.rope_theta));
    std::string s = "llama L" + std::to_string(c.num_layers) + " C" + std::to_string(c.channels) + " NH" +
                    std::to_string(c.num_heads) + " KV" + std::to_string(c.num_kv_heads) + " F" +
                    std::to_string(c.ffn_hidden) + tail + extra;
    const RopeScaling& r = c.rope_scaling;
    if (r.factor != 0.0f) {
        std::snprintf(extra, sizeof extra, " (llama3 x%g, %g/%g, %d)", static_cast<double>(r.factor),
                      static_cast<double>(r.low_freq_factor), static_cast<double>(r.high_freq_factor),
                      r.original_max_position);
        s += extra;
    }
    std::snprintf(extra, sizeof extra, " eps %g", static_cast<double>(c.norm_eps));
    s += extra;
    s += c.tied_embeddings ? " tied" : " untied";
    return s;
}

int llama_qkv(const ModelConfig& c) { return (c.num_heads + 2 * c.num_kv_heads) * head_size(c); }

std::vector<int> block_shape(BlockTensor t, const ModelConfig& config) {
    const int C = config.channels, F = config.ffn_hidden;
    switch (t) {
        case BlockTensor::ln1w:
        case BlockTensor::ln2w: return {C};
        case BlockTensor::qkvw: return {llama_qkv(config), C};
        case BlockTensor::attprojw: return {C, C};
        case BlockTensor::fcw: return {2 * F, C};
        case BlockTensor::fcprojw: return {C, F};
        default: return {};  // no biases
    }
}

std::vector<GlobalTensor> global_tensors(const ModelConfig& c) {
    using W = GlobalTensor::Which;
    std::vector<GlobalTensor> out = {{W::wte, {c.padded_vocab_size, c.channels}}};
    if (!c.tied_embeddings) out.push_back({W::lm_head, {c.padded_vocab_size, c.channels}});
    out.push_back({W::lnfw, {c.channels}});
    return out;
}

// core/llama.cpp Llama::ensure_activations (fp32).
void cpu_buffers(const PassCommon& k, PassBuffers& p) {
    const std::size_t N = k.N, C = k.C, f = k.f, F = k.c.ffn_hidden, QKV = llama_qkv(k.c);
    p.layer = (5 * N * C + 2 * N + N * QKV + 3 * N * F + k.att) * f;
    p.global = k.io + (2 * N * C + N) * f;  // encoded, lnf, its rstd
    p.workspace = (N * std::max(QKV, C) + 2 * N * C + 2 * N * QKV + 3 * N * F + k.att) * f;
}

// kernels/cuda/cuda_llama.cpp's activations, and its rotary tables.
void cuda_buffers(const PassCommon& k, PassBuffers& p) {
    const auto r = k.round;
    const std::size_t N = k.N, C = k.C, h = k.h, f = k.f, F = k.c.ffn_hidden, QKV = llama_qkv(k.c);
    const std::size_t rope = r(static_cast<std::size_t>(k.c.max_seq_len) * (C / k.NH / 2) * f);
    p.layer = 5 * k.nc + 2 * k.stat + r(N * QKV * h) + k.saved + r(2 * N * F * h) + r(N * F * h);
    p.global = k.io + 2 * k.nc + k.stat;  // encoded, lnf, its rstd
    p.workspace = k.shared + r(N * QKV * h) + r(2 * N * F * h) + r(N * F * h) + r(k.chunks * C * f) + 2 * rope;
}

ModelConfig llama(int T, int V, int L, int NH, int C, int KV, int F) {
    ModelConfig c = preset_shape(ModelFamily::llama, T, V, L, NH, C);
    c.num_kv_heads = KV;
    c.ffn_hidden = F;
    return c;
}

// `archipelago plan` from bare sizes: Llama 2's vocabulary and untied head, every head its own KV,
// and Llama's MLP rule, 2/3 of 4C to a multiple of 256.
void plan_defaults(ModelConfig& c) {
    c.vocab_size = 32000;
    c.tied_embeddings = false;
}
void plan_complete(ModelConfig& c) {
    if (c.ffn_hidden == 0) c.ffn_hidden = (8 * c.channels / 3 + 255) / 256 * 256;
    if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
}

}  // namespace

const ModelFamilySpec& llama_family() {
    static const ModelFamilySpec spec{
        .id = ModelFamily::llama,
        .name = "llama",
        .settings = {"kv_heads", "ffn_hidden", "rope_theta", "tied_embeddings"},
        .presets = {{"llama-tiny", [] { return llama(128, 50257, 4, 4, 128, 2, 352); }},
                    {"smollm-135m", [] { return llama(2048, 49152, 30, 9, 576, 3, 1536); }},
                    {"smollm-360m", [] {  // SmolLM2-360M: 8192 positions, rotary base 100000
                         ModelConfig c = llama(8192, 49152, 32, 15, 960, 5, 2560);
                         c.rope_theta = 100000.0f;
                         return c;
                     }}},
        .validate = validate_llama,
        .describe = describe,
        .qkv_channels = llama_qkv,
        .block_shape = block_shape,
        .global_tensors = global_tensors,
        .init_params = llama_init_params,
        .make_on = [](const ModelConfig& c, Backend& b, ParamStore* s) -> std::unique_ptr<Transformer> {
            return std::make_unique<Llama>(c, b, s);
        },
        .make_owning = [](const ModelConfig& c, std::unique_ptr<Backend> b) -> std::unique_ptr<Transformer> {
            return std::make_unique<Llama>(c, std::move(b));
        },
        .write_checkpoint = write_safetensors_checkpoint,
        .export_hf = export_hf_llama,
        .hf_architecture = "LlamaForCausalLM",
        .hf_config = hf_llama_config,
        .import_hf = import_hf_llama,
        .cpu_buffers = cpu_buffers,
        .cuda_buffers = cuda_buffers,
        .mlp_flops_per_token = [](const ModelConfig& c) { return 3.0 * c.channels * c.ffn_hidden; },
        .plan_defaults = plan_defaults,
        .plan_complete = plan_complete,
    };
    return spec;
}

}  // namespace arch
