// core/hf_llama.h: the Llama family under Hugging Face's LlamaForCausalLM names, both ways: its
// tensors (model.layers.N.self_attn.q_proj.weight, ...) to the flat ParamLayout buffer and back, and
// the config.json transformers loads. HF's weights are nn.Linear (out, in) like ours, so rows are
// copied, never transposed: q, k, v rows stack into qkvw, gate and up rows into fcw. Only the real V
// rows of the embeddings are HF's; the padded rows are the engine's own. Reading config.json is
// core/hf_import.h's; this file is shared by import, export and the native checkpoint.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/hf_tensors.h"
#include "core/model_config.h"
#include "core/safetensors.h"

namespace arch {

// Every tensor under its HF name, embed_tokens and lm_head with V rows; lm_head only when untied. Each
// is a view of params (no copy), so params must outlive them.
std::vector<SafeTensorOut> llama_hf_tensors(const ModelConfig& config, std::span<const float> params);

// The name and HF shape of every tensor llama_hf_tensors writes, in the same order.
std::vector<std::pair<std::string, std::vector<int64_t>>> llama_hf_shapes(const ModelConfig& config);

// The whole flat buffer from tensors under HF names (padded rows 0). A tied model's lm_head.weight,
// when present, must equal embed_tokens. Does not refuse leftover tensors: see check_all_used.
std::vector<float> llama_params_from_hf(const ModelConfig& config, HfTensors& tensors);

// config.json for transformers: LlamaForCausalLM, rope_scaling null or Llama 3's ("rope_type":
// "llama3"), tie_word_embeddings as the config says. Floats as their shortest decimal.
std::string llama_hf_config_json(const ModelConfig& config);

// The shortest decimal that reads back as x (1e-05f -> 1e-05, not 9.99999974737875e-06).
double shortest_decimal(float x);

}  // namespace arch
