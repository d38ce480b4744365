// core/gpt2_family.cpp: GPT-2's registration (core/model_family.h): learned positions, LayerNorm
// with biases, a 4C GELU MLP, tied embeddings; llm.c's checkpoint file, HF's GPT2LMHeadModel folder.
#include <algorithm>

#include "core/checkpoint.h"
#include "core/gpt2.h"
#include "core/hf_export.h"
#include "core/hf_import.h"
#include "core/model_family.h"

namespace arch {
namespace {

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

std::string describe(const ModelConfig& c, const std::string& tail) {
    return "L" + std::to_string(c.num_layers) + " C" + std::to_string(c.channels) + " NH" + std::to_string(c.num_heads) +
           tail;
}

std::vector<int> block_shape(BlockTensor t, const ModelConfig& config) {
    const int C = config.channels;
    switch (t) {
        case BlockTensor::qkvw: return {3 * C, C};
        case BlockTensor::qkvb: return {3 * C};
        case BlockTensor::attprojw: return {C, C};
        case BlockTensor::fcw: return {4 * C, C};
        case BlockTensor::fcb: return {4 * C};
        case BlockTensor::fcprojw: return {C, 4 * C};
        default: return {C};  // ln1w, ln1b, attprojb, ln2w, ln2b, fcprojb
    }
}

std::vector<GlobalTensor> global_tensors(const ModelConfig& c) {
    using W = GlobalTensor::Which;
    return {{W::wte, {c.padded_vocab_size, c.channels}},
            {W::wpe, {c.max_seq_len, c.channels}},
            {W::lnfw, {c.channels}},
            {W::lnfb, {c.channels}}};
}

// core/gpt2.cpp GPT2::ensure_activations (fp32).
void cpu_buffers(const PassCommon& k, PassBuffers& p) {
    const std::size_t N = k.N, C = k.C, f = k.f;
    p.layer = (16 * N * C + 4 * N + k.att) * f;
    p.global = k.io + (2 * N * C + 2 * N) * f;      // encoded, lnf and its mean, rstd
    p.workspace = (17 * N * C + k.att) * f;         // scratch 4, dresidual, dlnf, dqkv 3, dfch 4, dfch_gelu 4
}

// kernels/cuda/cuda_gpt2.cpp's activations, and layernorm.cu backward_shape's partial sums of 2C
// floats per block.
void cuda_buffers(const PassCommon& k, PassBuffers& p) {
    const auto r = k.round;
    const std::size_t N = k.N, C = k.C, h = k.h, f = k.f;
    const std::size_t c_pad = ceil_div(C, 256) * 256;
    const std::size_t warps = std::clamp<std::size_t>(48 * 1024 / (2 * c_pad * f), 1, 8);
    const std::size_t max_blocks = std::min<std::size_t>(ceil_div(N, warps), 512);
    const std::size_t ln_blocks = ceil_div(N, ceil_div(N, max_blocks));
    p.layer = 5 * k.nc + 4 * k.stat + r(3 * N * C * h) + k.saved +
              2 * r(4 * N * C * h);          // ln1 atty residual2 ln2 residual3, qkv, fch fch_gelu
    p.global = k.io + 2 * k.nc + 2 * k.stat;  // encoded, lnf and its mean, rstd
    p.workspace = k.shared + r(3 * N * C * h) + r(4 * N * C * h) + r(ln_blocks * 2 * C * f) + r(k.chunks * 4 * C * f);
}

}  // namespace

const ModelFamilySpec& gpt2_family() {
    static const ModelFamilySpec spec{
        .id = ModelFamily::gpt2,
        .name = "gpt2",
        .settings = {},
        .presets = {{"tiny", [] { return preset_shape(ModelFamily::gpt2, 128, 50257, 4, 4, 128); }},
                    {"small", [] { return preset_shape(ModelFamily::gpt2, 256, 50257, 6, 6, 384); }},
                    {"gpt2-124m", [] { return preset_shape(ModelFamily::gpt2, 1024, 50257, 12, 12, 768); }}},
        .validate = nullptr,
        .describe = describe,
        .qkv_channels = [](const ModelConfig& c) { return 3 * c.channels; },
        .block_shape = block_shape,
        .global_tensors = global_tensors,
        .init_params = gpt2_init_params,
        .make_on = [](const ModelConfig& c, Backend& b, ParamStore* s) -> std::unique_ptr<Transformer> {
            return std::make_unique<GPT2>(c, b, s);
        },
        .make_owning = [](const ModelConfig& c, std::unique_ptr<Backend> b) -> std::unique_ptr<Transformer> {
            return std::make_unique<GPT2>(c, std::move(b));
        },
        .write_checkpoint = write_llmc_checkpoint,
        .export_hf = export_hf_gpt2,
        .hf_architecture = "GPT2LMHeadModel",
        .hf_config = hf_gpt2_config,
        .import_hf = import_hf_gpt2,
        .cpu_buffers = cpu_buffers,
        .cuda_buffers = cuda_buffers,
        .mlp_flops_per_token = [](const ModelConfig& c) { return 8.0 * c.channels * c.channels; },
        .plan_defaults = [](ModelConfig& c) { c.vocab_size = 50257; },
    };
    return spec;
}

}  // namespace arch
