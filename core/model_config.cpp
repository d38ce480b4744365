// core/model_config.cpp: presets, validation and descriptions of ModelConfig.
#include "core/model_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>

#include "core/error.h"

namespace arch {

int pad_vocab(int vocab_size) { return (vocab_size + 127) / 128 * 128; }

namespace {
ModelConfig gpt2(int T, int V, int L, int NH, int C) {
    ModelConfig c;
    c.max_seq_len = T;
    c.vocab_size = V;
    c.num_layers = L;
    c.num_heads = NH;
    c.channels = C;
    return c;
}

ModelConfig llama(int T, int V, int L, int NH, int C, int KV, int F) {
    ModelConfig c = gpt2(T, V, L, NH, C);
    c.family = ModelFamily::llama;
    c.num_kv_heads = KV;
    c.ffn_hidden = F;
    return c;
}

// The presets, in the order they are listed to users.
struct Preset {
    const char* name;
    ModelConfig (*make)();
};
constexpr Preset kPresets[] = {
    {"tiny", [] { return gpt2(128, 50257, 4, 4, 128); }},
    {"small", [] { return gpt2(256, 50257, 6, 6, 384); }},
    {"gpt2-124m", [] { return gpt2(1024, 50257, 12, 12, 768); }},
    {"llama-tiny", [] { return llama(128, 50257, 4, 4, 128, 2, 352); }},
    {"smollm-135m", [] { return llama(2048, 49152, 30, 9, 576, 3, 1536); }},
    {"smollm-360m",  // SmolLM2-360M: 8192 positions, rotary base 100000
     [] {
         ModelConfig c = llama(8192, 49152, 32, 15, 960, 5, 2560);
         c.rope_theta = 100000.0f;
         return c;
     }},
};

}  // namespace

const std::string& model_preset_names() {
    static const std::string names = [] {
        std::string s;
        const std::size_t n = std::size(kPresets);
        for (std::size_t i = 0; i < n; ++i) s += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + kPresets[i].name;
        return s;
    }();
    return names;
}

ModelConfig model_preset(const std::string& name, int vocab_size) {
    const auto it = std::find_if(std::begin(kPresets), std::end(kPresets), [&](const Preset& p) { return name == p.name; });
    if (it == std::end(kPresets)) throw Error("unknown model config '" + name + "': expected " + model_preset_names());
    ModelConfig c = it->make();
    if (vocab_size > 0) c.vocab_size = vocab_size;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    return c;
}

const char* family_name(ModelFamily family) { return family == ModelFamily::llama ? "llama" : "gpt2"; }

ModelFamily parse_family(const std::string& name) {
    if (name == "gpt2") return ModelFamily::gpt2;
    if (name == "llama") return ModelFamily::llama;
    throw Error("model family must be gpt2 or llama, got '" + name + "'");
}

int head_size(const ModelConfig& c) { return c.channels / c.num_heads; }

int qkv_channels(const ModelConfig& c) {
    if (c.family == ModelFamily::gpt2) return 3 * c.channels;
    return (c.num_heads + 2 * c.num_kv_heads) * head_size(c);
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
    // Not llm.c's uint16 shard limit: a model of Llama 3's 128256 tokens imports, samples and exports;
    // `prepare` refuses a tokenizer whose ids do not fit the shards (core/corpus.cpp).
    if (c.vocab_size > (1 << 24))
        throw Error("model config: vocab " + std::to_string(c.vocab_size) + " is above 16777216");
    if (c.family != ModelFamily::llama) return;
    positive("KV heads", c.num_kv_heads);
    positive("MLP width (F)", c.ffn_hidden);
    if (c.num_heads % c.num_kv_heads != 0)
        throw Error("model config: KV heads " + std::to_string(c.num_kv_heads) + " do not divide heads NH=" +
                    std::to_string(c.num_heads));
    if (head_size(c) % 2 != 0)
        throw Error("model config: rotary embeddings need an even head size, got " + std::to_string(head_size(c)));
    if (!(c.rope_theta > 0.0f) || !std::isfinite(c.rope_theta))
        throw Error("model config: rope_theta must be positive, got " + std::to_string(c.rope_theta));
    if (!(c.norm_eps > 0.0f) || !std::isfinite(c.norm_eps))
        throw Error("model config: the RMSNorm epsilon must be positive, got " + std::to_string(c.norm_eps));
    const RopeScaling& s = c.rope_scaling;
    if (s.factor != 0.0f &&
        (!(s.factor >= 1.0f) || !(s.high_freq_factor > s.low_freq_factor) || s.original_max_position <= 0))
        throw Error("model config: rope scaling needs factor >= 1, high_freq_factor > low_freq_factor and a "
                    "positive original_max_position_embeddings");
}

std::string describe(const ModelConfig& c) {
    const std::string L = std::to_string(c.num_layers), C = std::to_string(c.channels), NH = std::to_string(c.num_heads);
    const std::string tail = " T" + std::to_string(c.max_seq_len) + " V" + std::to_string(c.vocab_size) + " (Vp " +
                             std::to_string(c.padded_vocab_size) + ")";
    if (c.family == ModelFamily::gpt2) return "L" + L + " C" + C + " NH" + NH + tail;
    char extra[160];
    std::snprintf(extra, sizeof extra, " rope %g", static_cast<double>(c.rope_theta));
    std::string s = "llama L" + L + " C" + C + " NH" + NH + " KV" + std::to_string(c.num_kv_heads) + " F" +
                    std::to_string(c.ffn_hidden) + tail + extra;
    const RopeScaling& r = c.rope_scaling;
    if (r.factor != 0.0f) {
        std::snprintf(extra, sizeof extra, " (llama3 x%g, %g/%g, %d)", static_cast<double>(r.factor),
                      static_cast<double>(r.low_freq_factor), static_cast<double>(r.high_freq_factor),
                      r.original_max_position);
        s += extra;
    }
    std::snprintf(extra, sizeof extra, " eps %g", static_cast<double>(c.norm_eps));
    s += extra;
    s += c.tied_embeddings ? " tied" : " untied";
    return s;
}

}  // namespace arch
