// core/checkpoint_safetensors.h: the Llama family's native checkpoint (llm.c's format is GPT-2's).
// One fp32 safetensors file under Hugging Face's LlamaForCausalLM names (core/hf_llama.h) whose
// "__metadata__" carries the whole ModelConfig as JSON ("archipelago.model_config"), so the file
// alone is the checkpoint and reads back bit-exactly, Vp included. The padded rows V..Vp of the
// embeddings (zero in any healthy run) are stored, under archipelago.* names transformers ignores,
// only when some of them are not zero. Beside the file: config.json, and a model.safetensors link to
// it when it has another name, so transformers loads the folder. core/checkpoint.h picks this format
// by content, never by file name; use that API rather than this one.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/model_config.h"

namespace arch {

// Whether the file starts like a safetensors file (a sane header length, then '{'); false for an
// llm.c checkpoint and for a file that cannot be opened.
bool is_safetensors_file(const std::string& path);

ModelConfig read_safetensors_checkpoint_config(const std::string& path);
std::vector<float> read_safetensors_checkpoint_params(const std::string& path, const ModelConfig& expected);
void write_safetensors_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params);

}  // namespace arch
