// core/model_config.cpp: presets and validation for ModelConfig.
#include "core/model_config.h"

#include "core/error.h"

namespace arch {

int pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

ModelConfig model_preset(const std::string& name, int vocab_size) {
    ModelConfig c;
    if (name == "tiny") {
        c = {128, 50257, 0, 4, 4, 128};
    } else if (name == "small") {
        c = {256, 50257, 0, 6, 6, 384};
    } else if (name == "gpt2-124m") {
        c = {1024, 50257, 0, 12, 12, 768};
    } else {
        throw Error("unknown model config '" + name + "': expected tiny, small or gpt2-124m");
    }
    if (vocab_size > 0) c.vocab_size = vocab_size;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    return c;
}

void validate(const ModelConfig& c) {
    auto positive = [](const char* what, int v) {
        if (v <= 0) throw Error(std::string("model config: ") + what + " must be positive, got " + std::to_string(v));
    };
    positive("max sequence length (T)", c.max_seq_len);
    positive("vocab size (V)", c.vocab_size);
    positive("layers (L)", c.num_layers);
    positive("heads (NH)", c.num_heads);
    positive("channels (C)", c.channels);
    if (c.channels % c.num_heads != 0)
        throw Error("model config: channels C=" + std::to_string(c.channels) +
                    " is not divisible by heads NH=" + std::to_string(c.num_heads));
    if (c.padded_vocab_size < c.vocab_size)
        throw Error("model config: padded vocab " + std::to_string(c.padded_vocab_size) +
                    " is smaller than vocab " + std::to_string(c.vocab_size));
    if (c.vocab_size > 65536)
        throw Error("model config: vocab " + std::to_string(c.vocab_size) +
                    " does not fit llm.c's uint16 token shards (at most 65536)");
}

std::string describe(const ModelConfig& c) {
    return "L" + std::to_string(c.num_layers) + " C" + std::to_string(c.channels) + " NH" +
           std::to_string(c.num_heads) + " T" + std::to_string(c.max_seq_len) + " V" +
           std::to_string(c.vocab_size) + " (Vp " + std::to_string(c.padded_vocab_size) + ")";
}

}  // namespace arch
