// core/hf_import.h: a Hugging Face model folder (config.json, and model.safetensors or the shards a
// model.safetensors.index.json names; F32, F16 or BF16) to the engine's config and flat parameters.
// GPT2LMHeadModel: its Conv1D weights (in, out) are transposed to our (out, in), wte gains zero padded
// rows, lm_head must be tied to wte. LlamaForCausalLM (core/hf_llama.h): rows copied as they are,
// tied or untied, rope_theta and rope_scaling (transformers 4.x) or rope_parameters (5.x), the
// default rope or Llama 3's. Config options the engine does not build (another activation, biases, a
// head_dim other than hidden_size / heads, another rope type, cross attention, ...) are refused with
// the key named, as are missing tensors, shape mismatches and tensors it does not know.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace arch {

struct HfModel {
    std::string architecture;   // "GPT2LMHeadModel" or "LlamaForCausalLM"
    ModelConfig config;
    std::vector<float> params;  // ParamLayout order
};

HfModel import_hf(const std::string& dir);

// The model config alone, checked the same way, from a config.json (or a folder holding one); no
// weights are read, so `archipelago plan` can size a model that is not downloaded.
ModelConfig hf_model_config(const std::string& path);

// Each family's half, which its registration (core/model_family.h) names with its HF class: the config
// from a parsed config.json, and the whole import. `source` names the file in errors.
ModelConfig hf_gpt2_config(const nlohmann::json& config, const std::string& source);
HfModel import_hf_gpt2(const std::string& dir, const nlohmann::json& config, const std::string& source);
ModelConfig hf_llama_config(const nlohmann::json& config, const std::string& source);
HfModel import_hf_llama(const std::string& dir, const nlohmann::json& config, const std::string& source);

}  // namespace arch
