// core/hf_export.h: export to a Hugging Face folder (model.safetensors + config.json) that
// transformers loads as GPT2LMHeadModel or LlamaForCausalLM. GPT-2: names are HF GPT-2's
// ("transformer.h.0.attn.c_attn.weight"); HF's Conv1D stores weights (in, out), so our (out, in)
// matmul weights are transposed; wte loses its padded rows; lm_head is tied to wte and not stored.
// Llama: core/hf_llama.h's names, padded rows dropped, lm_head stored only when untied.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace arch {

// params in ParamLayout order. Creates dir if needed; files are written atomically. export_hf picks
// the family's.
void export_hf(const std::string& dir, const ModelConfig& config, std::span<const float> params);
void export_hf_gpt2(const std::string& dir, const ModelConfig& config, std::span<const float> params);
void export_hf_llama(const std::string& dir, const ModelConfig& config, std::span<const float> params);

// rows x cols (row-major) -> cols x rows: our (out, in) matmul weights to HF's Conv1D (in, out), and
// back (core/hf_import.h).
std::vector<float> transposed(const float* src, int rows, int cols);

}  // namespace arch
