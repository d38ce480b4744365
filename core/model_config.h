// core/model_config.h: the shape of a GPT-2 model (llm.c's GPT2Config) and the named presets.
// Vp is V rounded up to a multiple of 128: the padded rows of wte exist in every buffer and file but
// never receive a token and never enter the loss.
#pragma once

#include <string>

namespace arch {

struct ModelConfig {
    int max_seq_len = 0;        // maxT: positions in wpe
    int vocab_size = 0;         // V: real tokens
    int padded_vocab_size = 0;  // Vp: V rounded up to a multiple of 128
    int num_layers = 0;         // L
    int num_heads = 0;          // NH
    int channels = 0;           // C
};

// Rounds V up to a multiple of 128.
int pad_vocab(int vocab_size);

// Presets by name: "tiny" (L4 C128 NH4 T128), "small" (L6 C384 NH6 T256), "gpt2-124m" (L12 C768 NH12
// T1024 V50257). vocab_size 0 keeps the preset's own (50257). Throws arch::Error on an unknown name.
ModelConfig model_preset(const std::string& name, int vocab_size = 0);

// Throws arch::Error naming the first thing that cannot work (C % NH != 0, non-positive sizes, ...).
void validate(const ModelConfig& config);

std::string describe(const ModelConfig& config);  // "L4 C128 NH4 T128 V4096 (Vp 4096)"

}  // namespace arch
