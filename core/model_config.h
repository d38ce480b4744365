// core/model_config.h: the shape of a model, GPT-2 (llm.c's GPT2Config) or the Llama family, and the
// named presets. Vp is V rounded up to a multiple of 128: the padded rows of wte (and of an untied
// lm_head) exist in every buffer and file but never receive a token and never enter the loss.
// The Llama fields are ignored for GPT-2, whose positions are learned and whose MLP is 4C wide.
#pragma once

#include <string>

namespace arch {

enum class ModelFamily { gpt2, llama };

// Llama 3's rope frequency scaling (HF rope_type "llama3"); factor 0 means none.
struct RopeScaling {
    float factor = 0.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    int original_max_position = 8192;
    bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
    int max_seq_len = 0;        // maxT: positions in wpe (GPT-2), longest sequence (Llama)
    int vocab_size = 0;         // V: real tokens
    int padded_vocab_size = 0;  // Vp: V rounded up to a multiple of 128
    int num_layers = 0;         // L
    int num_heads = 0;          // NH
    int channels = 0;           // C
    ModelFamily family = ModelFamily::gpt2;
    // Llama family only.
    int num_kv_heads = 0;        // KV heads (grouped-query attention); divides NH
    int ffn_hidden = 0;          // F: the SwiGLU MLP's width (HF intermediate_size)
    float rope_theta = 10000.0f;
    RopeScaling rope_scaling;
    float norm_eps = 1e-5f;      // RMSNorm's epsilon
    bool tied_embeddings = true;  // lm_head is wte (else its own (Vp, C) tensor)
    bool operator==(const ModelConfig&) const = default;
};

// Rounds V up to a multiple of 128.
int pad_vocab(int vocab_size);

// Presets by name: "tiny" (L4 C128 NH4 T128), "small" (L6 C384 NH6 T256), "gpt2-124m" (L12 C768 NH12
// T1024 V50257); the Llama family's "llama-tiny" (L4 C128 NH4 KV2 F352 T128), "smollm-135m" (L30
// C576 NH9 KV3 F1536 T2048 V49152, tied) and "smollm-360m" (SmolLM2-360M: L32 C960 NH15 KV5 F2560
// T8192 V49152, tied, rotary base 100000). vocab_size 0 keeps the preset's own. Throws arch::Error on
// an unknown name.
ModelConfig model_preset(const std::string& name, int vocab_size = 0);
// "tiny, small, ... or smollm-360m": every preset's name, for help texts and errors.
const std::string& model_preset_names();

// Throws arch::Error naming the first thing that cannot work (C % NH != 0, non-positive sizes, ...).
void validate(const ModelConfig& config);

// "L4 C128 NH4 T128 V4096 (Vp 4096)"; a Llama's adds its family and every Llama field, so two configs
// describe the same only when they are the same model.
std::string describe(const ModelConfig& config);

const char* family_name(ModelFamily family);  // "gpt2", "llama"
ModelFamily parse_family(const std::string& name);  // throws arch::Error for anything else
int head_size(const ModelConfig& config);  // C / NH
int qkv_channels(const ModelConfig& config);  // (NH + 2 KV) hs; 3C for GPT-2

}  // namespace arch
