// core/model_config.cpp: presets, validation and descriptions of ModelConfig.
#include "core/model_config.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <cstdio>

#include "core/error.h"
#include "core/model_family.h"

namespace arch {

int pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

namespace {
// Every family's presets, in the order they are listed to users (the families' registration order).
std::vector<const ModelPreset*> all_presets() {
    std::vector<const ModelPreset*> out;
    for (const ModelFamilySpec* f : model_families())
        for (const ModelPreset& p : f->presets) out.push_back(&p);
    return out;
}
}  // namespace

const std::string& model_preset_names() {
    static const std::string names = [] {
        std::string s;
        const std::vector<const ModelPreset*> presets = all_presets();
        const std::size_t n = presets.size();
        for (std::size_t i = 0; i < n; ++i) s += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + presets[i]->name;
        return s;
    }();
    return names;
}

ModelConfig model_preset(const std::string& name, int vocab_size) {
    const std::vector<const ModelPreset*> presets = all_presets();
    const auto it = std::find_if(presets.begin(), presets.end(), [&](const ModelPreset* p) { return name == p->name; });
    if (it == presets.end()) throw Error("unknown model config '" + name + "': expected " + model_preset_names());
    ModelConfig c = (*it)->make();
    if (vocab_size > 0) c.vocab_size = vocab_size;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    return c;
}

const char* family_name(ModelFamily family) { return family_spec(family).name; }

ModelFamily parse_family(const std::string& name) { return family_spec(name).id; }

int head_size(const ModelConfig& c) { return c.channels / c.num_heads; }

int qkv_channels(const ModelConfig& c) { return family_spec(c.family).qkv_channels(c); }

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
    // Not llm.c's uint16 shard limit: a model of Llama 3's 128256 tokens imports, samples and exports;
    // `prepare` refuses a tokenizer whose ids do not fit the shards (core/corpus.cpp).
    if (c.vocab_size > (1 << 24))
        throw Error("model config: vocab " + std::to_string(c.vocab_size) + " is above 16777216");
    if (const auto check = family_spec(c.family).validate) check(c);
}

std::string describe(const ModelConfig& c) {
    const std::string tail = " T" + std::to_string(c.max_seq_len) + " V" + std::to_string(c.vocab_size) + " (Vp " +
                             std::to_string(c.padded_vocab_size) + ")";
    return family_spec(c.family).describe(c, tail);
}

}  // namespace arch
