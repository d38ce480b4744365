// core/checkpoint.h: model checkpoints. GPT-2: llm.c's format (magic 20240326, version 3 = fp32):
// 256 int32 header (magic, version, maxT, V, L, NH, C, Vp), then every parameter in llm.c's order
// (wte, wpe, all ln1w, all ln1b, ...). The Llama family: safetensors with Hugging Face names and the
// whole config in its metadata, plus config.json beside it (core/checkpoint_safetensors.h). Reads
// tell the two apart by content, not by name. In memory we use ParamLayout's layer-major order;
// conversion happens here and only here. Writes are atomic; reads validate everything first.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/param_layout.h"

namespace arch {

// Reads and validates the header (magic, version, sizes, and that the file holds exactly the
// parameters the header promises). Throws arch::Error naming the file otherwise.
ModelConfig read_checkpoint_config(const std::string& path);

// Returns the parameters in ParamLayout (buffer) order.
std::vector<float> read_checkpoint_params(const std::string& path, const ModelConfig& expected);

// params in buffer order, size layout.num_params(), in the family's checkpoint format.
void write_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params);
// llm.c's format (GPT-2's registration writes its checkpoints with it).
void write_llmc_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params);

}  // namespace arch
