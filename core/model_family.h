// core/model_family.h: one registration per model family, as torchtitan's train specs: what the
// code outside a family's own files needs of it. Its name, the checks and description of its config,
// its parameter layout, its init, its CPU model, its checkpoint and Hugging Face files, and the figures
// `archipelago plan` and the benches count. A family lives in its own files (core/gpt2*.cpp,
// core/llama*.cpp) and one line of core/model_family.cpp's table; its CUDA model is one line of
// kernels/cuda/cuda_families.cpp's. Nothing else branches on the family.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/model_config.h"
#include "core/param_layout.h"

namespace arch {

class Backend;
class ParamStore;
class Transformer;
struct HfModel;

// The activation and workspace bytes of one (B, T) on an engine, by what recompute can do to them
// (core/memory_plan.cpp).
struct PassBuffers {
    std::size_t layer = 0;            // per layer, kept from forward to backward
    std::size_t layer_attention = 0;  // of which attention's internals (its output and P or the log-sum-exp)
    std::size_t layer_input = 0;      // of which the block's input (what block recompute keeps)
    std::size_t global = 0;           // kept once: ids, embeddings, final norm, logits, losses
    std::size_t workspace = 0;        // shared by the layers
};
// What every family's buffers share, which memory_plan.cpp sizes before it asks the family for its
// own: N = B T tokens, f the bytes of a float; on CUDA h the bytes of a bf16, `round` the allocator's
// rounding, nc one (N, C) bf16 buffer, stat one float per token, saved attention's kept internals,
// chunks the norm kernels' partial sums, shared the scratch every family has.
struct PassCommon {
    const ModelConfig& c;
    std::size_t B, T, N, C, NH, f;
    std::size_t att = 0;  // CPU: B NH T T attention probabilities
    std::size_t io = 0;   // ids, targets, logits, losses
    // CUDA only
    std::size_t h = 0, nc = 0, stat = 0, saved = 0, chunks = 0, shared = 0;
    std::size_t (*round)(std::size_t bytes) = nullptr;
};

// A named shape (model.config in run.toml, --config everywhere): the family's fields set, V before padding.
struct ModelPreset {
    const char* name;
    ModelConfig (*make)();
};
// The shape every family has (T V L NH C), for the presets.
ModelConfig preset_shape(ModelFamily family, int T, int V, int L, int NH, int C);

// A tensor after the blocks (ParamLayout's globals), in the order the flat buffer holds them.
struct GlobalTensor {
    enum class Which { wte, wpe, lm_head, lnfw, lnfb } which;
    std::vector<int> shape;
};

struct ModelFamilySpec {
    ModelFamily id;
    const char* name;  // `plan --family`, and in every error that names a family
    // The [model] keys of run.toml (and plan's flags) that only this family takes, beyond the ones
    // every family has: a file that sets one for another family's preset is refused.
    std::vector<std::string> settings;
    std::vector<ModelPreset> presets;  // listed to users in registration order, then in this order

    // The checks beyond those every family shares (core/model_config.cpp validate); may be null.
    void (*validate)(const ModelConfig&);
    // describe(): the family's fields around the shared tail (" T1024 V50257 (Vp 50304)").
    std::string (*describe)(const ModelConfig&, const std::string& tail);
    int (*qkv_channels)(const ModelConfig&);

    // Layout: the shape of each block tensor (empty: the family lacks it), then the globals.
    std::vector<int> (*block_shape)(BlockTensor, const ModelConfig&);
    std::vector<GlobalTensor> (*global_tensors)(const ModelConfig&);

    // Init (drawn on the host: the same values on every device) and the CPU model.
    std::vector<float> (*init_params)(const ModelConfig&, uint64_t seed);
    std::unique_ptr<Transformer> (*make_on)(const ModelConfig&, Backend&, ParamStore*);
    std::unique_ptr<Transformer> (*make_owning)(const ModelConfig&, std::unique_ptr<Backend>);

    // Files: the training checkpoint, and the Hugging Face folder out and in (its config.json's
    // "architectures" names the family).
    void (*write_checkpoint)(const std::string& path, const ModelConfig&, std::span<const float> params);
    void (*export_hf)(const std::string& dir, const ModelConfig&, std::span<const float> params);
    const char* hf_architecture;
    ModelConfig (*hf_config)(const nlohmann::json& config, const std::string& source);
    HfModel (*import_hf)(const std::string& dir, const nlohmann::json& config, const std::string& source);

    // Plan figures: the family's own activation buffers on the CPU and CUDA engines, and the FLOPs of
    // its MLP per token and layer, forward (the benches' MFU).
    void (*cpu_buffers)(const PassCommon&, PassBuffers&);
    void (*cuda_buffers)(const PassCommon&, PassBuffers&);
    double (*mlp_flops_per_token)(const ModelConfig&);
    // `archipelago plan` from bare sizes: the family's defaults before the user's flags, and what it
    // derives from them after (either may be null).
    void (*plan_defaults)(ModelConfig&) = nullptr;
    void (*plan_complete)(ModelConfig&) = nullptr;
};

const ModelFamilySpec& family_spec(ModelFamily family);
// Throws arch::Error naming every family for a name none has.
const ModelFamilySpec& family_spec(const std::string& name);
std::string family_names();  // "gpt2 or llama"
std::span<const ModelFamilySpec* const> model_families();  // in registration order

}  // namespace arch
