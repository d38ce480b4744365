// core/hf_import.h: a Hugging Face model folder (config.json, and model.safetensors or the shards a
// model.safetensors.index.json names; F32, F16 or BF16) to the engine's config and flat parameters.
// GPT2LMHeadModel so far: its Conv1D weights (in, out) are transposed to our (out, in), wte gains
// zero padded rows, lm_head must be tied to wte. Config options the engine does not build (another
// activation, another layer-norm epsilon, cross attention, ...) are refused with the key named, as
// are missing tensors, shape mismatches and tensors it does not know.
#pragma once

#include <string>
#include <vector>

#include "core/model_config.h"

namespace arch {

struct HfModel {
    std::string architecture;   // "GPT2LMHeadModel"
    ModelConfig config;
    std::vector<float> params;  // ParamLayout order
};

HfModel import_hf(const std::string& dir);

}  // namespace arch
