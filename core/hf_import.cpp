// core/hf_import.cpp: import_hf (hf_import.h): config.json checked key by key, the safetensors
// shards opened (and validated) once each (core/hf_tensors.h), every tensor read under its Hugging
// Face name: GPT-2's here, Llama's through core/hf_llama.h.
#include "core/hf_import.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_export.h"
#include "core/hf_llama.h"
#include "core/hf_tensors.h"
#include "core/model_family.h"
#include "core/param_layout.h"

namespace arch {
namespace {

using json = nlohmann::json;

int key_int(const json& c, const char* key, const std::string& source) {
    if (!c.contains(key)) throw Error(source + ": the key '" + std::string(key) + "' is missing");
    if (!c.at(key).is_number_integer() || c.at(key).get<int64_t>() <= 0 || c.at(key).get<int64_t>() > (1 << 24))
        throw Error(source + ": '" + std::string(key) + "' must be a positive integer");
    return c.at(key).get<int>();
}

// A key that must hold `want` (or be absent, when absent means want).
template <class T>
void key_is(const json& c, const char* key, const T& want, const std::string& source, const std::string& why) {
    if (!c.contains(key) || c.at(key).is_null()) return;
    bool same = false;
    try {
        same = c.at(key).get<T>() == want;
    } catch (const json::exception&) {
    }
    if (!same) throw Error(source + ": '" + std::string(key) + "' = " + c.at(key).dump() + " is not supported (" + why + ")");
}

}  // namespace

ModelConfig hf_gpt2_config(const json& c, const std::string& source) {
    ModelConfig mc;
    mc.num_layers = key_int(c, "n_layer", source);
    mc.num_heads = key_int(c, "n_head", source);
    mc.channels = key_int(c, "n_embd", source);
    mc.max_seq_len = key_int(c, "n_positions", source);
    mc.vocab_size = key_int(c, "vocab_size", source);
    mc.padded_vocab_size = pad_vocab(mc.vocab_size);
    if (mc.channels % mc.num_heads != 0) throw Error(source + ": n_embd is not a multiple of n_head");
    key_is<std::string>(c, "activation_function", "gelu_new", source, "the engine's GELU is the tanh one, gelu_new");
    key_is<double>(c, "layer_norm_epsilon", 1e-5, source, "the engine's layer norm uses 1e-5");
    key_is<int>(c, "n_inner", 4 * mc.channels, source, "the MLP is 4 n_embd wide");
    key_is<bool>(c, "scale_attn_weights", true, source, "attention is scaled by 1/sqrt(head size)");
    key_is<bool>(c, "scale_attn_by_inverse_layer_idx", false, source, "not built");
    key_is<bool>(c, "add_cross_attention", false, source, "a decoder-only model is built");
    key_is<bool>(c, "tie_word_embeddings", true, source, "GPT-2's lm_head is wte");
    return mc;
}

HfModel import_hf_gpt2(const std::string& dir, const json& c, const std::string& source) {
    HfModel m;
    m.architecture = "GPT2LMHeadModel";
    m.config = hf_gpt2_config(c, source);
    const ModelConfig& mc = m.config;
    HfTensors t = HfTensors::folder(dir);
    const std::string p = t.has("transformer.wte.weight") ? "transformer." : "";
    const ParamLayout layout(mc);
    m.params.assign(layout.num_params(), 0.0f);
    const int C = mc.channels, V = mc.vocab_size;
    auto put = [&](std::size_t at, const std::vector<float>& v) { std::copy(v.begin(), v.end(), m.params.begin() + static_cast<std::ptrdiff_t>(at)); };
    const std::vector<float> wte = t.read(p + "wte.weight", {V, C});
    put(layout.wte(), wte);  // rows V..Vp stay zero
    put(layout.wpe(), t.read(p + "wpe.weight", {mc.max_seq_len, C}));
    for (int l = 0; l < mc.num_layers; ++l) {
        const BlockOffsets& o = layout.block(l);
        const std::string h = p + "h." + std::to_string(l) + ".";
        put(o.ln1w, t.read(h + "ln_1.weight", {C}));
        put(o.ln1b, t.read(h + "ln_1.bias", {C}));
        put(o.qkvw, transposed(t.read(h + "attn.c_attn.weight", {C, 3 * C}).data(), C, 3 * C));
        put(o.qkvb, t.read(h + "attn.c_attn.bias", {3 * C}));
        put(o.attprojw, transposed(t.read(h + "attn.c_proj.weight", {C, C}).data(), C, C));
        put(o.attprojb, t.read(h + "attn.c_proj.bias", {C}));
        put(o.ln2w, t.read(h + "ln_2.weight", {C}));
        put(o.ln2b, t.read(h + "ln_2.bias", {C}));
        put(o.fcw, transposed(t.read(h + "mlp.c_fc.weight", {C, 4 * C}).data(), C, 4 * C));
        put(o.fcb, t.read(h + "mlp.c_fc.bias", {4 * C}));
        put(o.fcprojw, transposed(t.read(h + "mlp.c_proj.weight", {4 * C, C}).data(), 4 * C, C));
        put(o.fcprojb, t.read(h + "mlp.c_proj.bias", {C}));
    }
    put(layout.lnfw(), t.read(p + "ln_f.weight", {C}));
    put(layout.lnfb(), t.read(p + "ln_f.bias", {C}));
    if (t.has("lm_head.weight") && t.read("lm_head.weight", {V, C}) != wte)
        throw Error("'" + dir + "': lm_head.weight differs from wte: an untied GPT-2 is not built");
    t.check_all_used({".attn.bias", ".attn.masked_bias"});  // the causal-mask buffers of older transformers
    return m;
}


namespace {
// A positive finite number under `key` of `c`, or `fallback` when absent (or null).
float key_float(const json& c, const char* key, float fallback, const std::string& where) {
    if (!c.contains(key) || c.at(key).is_null()) return fallback;
    const json& v = c.at(key);
    if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>()))
        throw Error(where + ": '" + std::string(key) + "' must be a positive number, got " + v.dump());
    return static_cast<float>(v.get<double>());
}

// rope_scaling (transformers 4.x) or rope_parameters (5.x): null, the default rope, or Llama 3's.
// Every other rope type (linear, dynamic, yarn, longrope, ...) is refused by name.
RopeScaling rope_scaling_from(const json& r, const std::string& key, const std::string& source) {
    RopeScaling s;
    if (r.is_null()) return s;
    if (!r.is_object()) throw Error(source + ": '" + key + "' must be an object or null, got " + r.dump());
    const char* type_key = r.contains("rope_type") ? "rope_type" : "type";
    const std::string type = r.contains(type_key) ? r.at(type_key).get<std::string>() : "default";
    if (type == "default") return s;
    if (type != "llama3")
        throw Error(source + ": '" + key + "." + type_key + "' = \"" + type +
                    "\" is not supported (the engine builds the default rope and Llama 3's, \"llama3\")");
    const std::string where = source + ": '" + key + "'";
    for (const char* k : {"factor", "low_freq_factor", "high_freq_factor"})
        if (!r.contains(k)) throw Error(where + " (llama3) lacks the key '" + std::string(k) + "'");
    s.factor = key_float(r, "factor", 0.0f, where);
    s.low_freq_factor = key_float(r, "low_freq_factor", 0.0f, where);
    s.high_freq_factor = key_float(r, "high_freq_factor", 0.0f, where);
    s.original_max_position = key_int(r, "original_max_position_embeddings", where);
    return s;
}

// rope_theta and rope_scaling (transformers 4.x) or rope_parameters (5.x, which holds both); when a
// file has both layouts they must agree.
void read_rope(const json& c, ModelConfig& mc, const std::string& source) {
    mc.rope_theta = key_float(c, "rope_theta", 10000.0f, source);  // LlamaConfig's default
    mc.rope_scaling = c.contains("rope_scaling") ? rope_scaling_from(c.at("rope_scaling"), "rope_scaling", source) : RopeScaling{};
    if (!c.contains("rope_parameters") || c.at("rope_parameters").is_null()) return;
    const json& p = c.at("rope_parameters");
    const RopeScaling scaling = rope_scaling_from(p, "rope_parameters", source);
    const float theta = key_float(p, "rope_theta", 10000.0f, source + ": 'rope_parameters'");
    const bool has_v4 = (c.contains("rope_theta") && !c.at("rope_theta").is_null()) ||
                        (c.contains("rope_scaling") && !c.at("rope_scaling").is_null());
    if (has_v4 && (theta != mc.rope_theta || !(scaling == mc.rope_scaling)))
        throw Error(source + ": 'rope_parameters' and 'rope_theta'/'rope_scaling' disagree");
    mc.rope_theta = theta;
    mc.rope_scaling = scaling;
}

}  // namespace

ModelConfig hf_llama_config(const json& c, const std::string& source) {
    ModelConfig mc;
    mc.family = ModelFamily::llama;
    mc.channels = key_int(c, "hidden_size", source);
    mc.ffn_hidden = key_int(c, "intermediate_size", source);
    mc.num_heads = key_int(c, "num_attention_heads", source);
    mc.num_kv_heads = c.contains("num_key_value_heads") && !c.at("num_key_value_heads").is_null()
                          ? key_int(c, "num_key_value_heads", source)
                          : mc.num_heads;
    mc.num_layers = key_int(c, "num_hidden_layers", source);
    mc.vocab_size = key_int(c, "vocab_size", source);
    mc.max_seq_len = key_int(c, "max_position_embeddings", source);
    mc.padded_vocab_size = pad_vocab(mc.vocab_size);
    if (mc.channels % mc.num_heads != 0) throw Error(source + ": hidden_size is not a multiple of num_attention_heads");
    key_is<int>(c, "head_dim", mc.channels / mc.num_heads, source,
                "the head size is hidden_size / num_attention_heads = " + std::to_string(mc.channels / mc.num_heads));
    key_is<std::string>(c, "hidden_act", "silu", source, "the engine's MLP is SwiGLU, silu");
    key_is<bool>(c, "attention_bias", false, source, "q, k, v and o have no biases");
    key_is<bool>(c, "mlp_bias", false, source, "the MLP has no biases");
    mc.norm_eps = key_float(c, "rms_norm_eps", 1e-6f, source);  // LlamaConfig's default
    read_rope(c, mc, source);
    mc.tied_embeddings = false;  // LlamaConfig's default
    if (c.contains("tie_word_embeddings") && !c.at("tie_word_embeddings").is_null()) {
        if (!c.at("tie_word_embeddings").is_boolean()) throw Error(source + ": 'tie_word_embeddings' must be true or false");
        mc.tied_embeddings = c.at("tie_word_embeddings").get<bool>();
    }
    try {
        validate(mc);
    } catch (const Error& e) {
        throw Error(source + ": " + e.what());
    }
    return mc;
}

HfModel import_hf_llama(const std::string& dir, const json& c, const std::string& source) {
    HfModel m;
    m.architecture = "LlamaForCausalLM";
    m.config = hf_llama_config(c, source);
    HfTensors t = HfTensors::folder(dir);
    m.params = llama_params_from_hf(m.config, t);
    // A buffer older transformers saved; the padded rows a native checkpoint may carry (a run folder).
    t.check_all_used({".rotary_emb.inv_freq"}, {"archipelago."});
    return m;
}

// config.json's object and its first architecture.
namespace {
json read_config(const std::string& file, std::string& arch) {
    const std::string source = "'" + file + "'";
    json c;
    try {
        c = json::parse(read_text_file(file));
    } catch (const json::exception& e) {
        throw Error(source + " is not valid JSON: " + e.what());
    }
    if (!c.is_object()) throw Error(source + " is not a JSON object");
    arch = c.contains("architectures") && c.at("architectures").is_array() && !c.at("architectures").empty() &&
                   c.at("architectures").at(0).is_string()
               ? c.at("architectures").at(0).get<std::string>()
               : "";
    if (arch.empty()) throw Error(source + ": the key 'architectures' is missing");
    return c;
}

// The family whose Hugging Face class `arch` is.
const ModelFamilySpec& family_of(const std::string& arch, const std::string& source) {
    std::string known;
    for (const ModelFamilySpec* f : model_families()) {
        if (arch == f->hf_architecture) return *f;
        known += (known.empty() ? "" : ", ") + std::string(f->hf_architecture);
    }
    throw Error(source + ": 'architectures' = " + arch + " is not supported (" + known + ")");
}

}  // namespace

ModelConfig hf_model_config(const std::string& path) {
    const std::string file = std::filesystem::is_directory(path) ? path + "/config.json" : path;
    const std::string source = "'" + file + "'";
    std::string arch;
    const json c = read_config(file, arch);
    try {
        return family_of(arch, source).hf_config(c, source);
    } catch (const json::exception& e) {
        throw Error(source + ": unexpected content: " + e.what());
    }
}

HfModel import_hf(const std::string& dir) {
    const std::string source = "'" + dir + "/config.json'";
    std::string arch;
    const json c = read_config(dir + "/config.json", arch);
    try {
        return family_of(arch, source).import_hf(dir, c, source);
    } catch (const json::exception& e) {
        throw Error(source + ": unexpected content: " + e.what());
    }
}

}  // namespace arch
