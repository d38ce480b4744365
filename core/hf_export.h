// core/hf_export.h: export to a Hugging Face folder (model.safetensors + config.json) that
// transformers loads as GPT2LMHeadModel. Names are HF GPT-2's ("transformer.h.0.attn.c_attn.weight");
// HF's Conv1D stores weights (in, out), so our (out, in) matmul weights are transposed; wte loses its
// padded rows; lm_head is tied to wte and not stored.
#pragma once

#include <span>
#include <string>

#include "core/model_config.h"

namespace arch {

// params in ParamLayout order. Creates dir if needed; files are written atomically.
void export_hf_gpt2(const std::string& dir, const ModelConfig& config, std::span<const float> params);

}  // namespace arch
