// core/hf_import.cpp: import_hf (hf_import.h): config.json checked key by key, the safetensors
// shards opened (and validated) once each, every tensor read under its Hugging Face name.
#include "core/hf_import.h"

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_export.h"
#include "core/param_layout.h"
#include "core/safetensors.h"

namespace arch {
namespace {

using json = nlohmann::json;

// Every tensor of the folder, by name, in whichever shard holds it.
class Tensors {
public:
    explicit Tensors(const std::string& dir) : dir_(dir) {
        const std::string index = dir + "/model.safetensors.index.json";
        if (file_exists(index)) {
            json j;
            try {
                j = json::parse(read_text_file(index, 64u << 20));
                for (const auto& [name, file] : j.at("weight_map").items()) add(name, file.get<std::string>());
            } catch (const json::exception& e) {
                throw Error("'" + index + "' is malformed: " + e.what());
            }
        } else if (file_exists(dir + "/model.safetensors")) {
            for (const auto& [name, t] : open("model.safetensors").tensors()) where_[name] = "model.safetensors";
        } else {
            throw Error("'" + dir + "' holds neither model.safetensors nor model.safetensors.index.json");
        }
    }
    bool has(const std::string& name) const { return where_.count(name) > 0; }
    std::vector<float> read(const std::string& name, const std::vector<int64_t>& shape) {
        const auto it = where_.find(name);
        if (it == where_.end()) throw Error("'" + dir_ + "': the tensor '" + name + "' is missing");
        used_.insert(name);
        return open(it->second).read(name, shape);
    }
    // Tensors nobody read, except those `ignored` (buffers transformers may save).
    void check_all_used(const std::set<std::string>& ignored_suffixes) const {
        for (const auto& [name, file] : where_) {
            if (used_.count(name)) continue;
            bool ignored = false;
            for (const std::string& s : ignored_suffixes)
                ignored = ignored || (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0);
            if (!ignored) throw Error("'" + dir_ + "': the tensor '" + name + "' is not part of the model the config describes");
        }
    }

private:
    void add(const std::string& name, const std::string& file) {
        if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..")
            throw Error("'" + dir_ + "/model.safetensors.index.json' names the shard '" + file + "': only files in the folder");
        where_[name] = file;
    }
    SafetensorsFile& open(const std::string& file) {
        auto& f = files_[file];
        if (!f) f = std::make_unique<SafetensorsFile>(dir_ + "/" + file);
        return *f;
    }
    std::string dir_;
    std::map<std::string, std::string> where_;
    std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
    std::set<std::string> used_;
};

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

HfModel import_gpt2(const std::string& dir, const json& c, const std::string& source) {
    HfModel m;
    m.architecture = "GPT2LMHeadModel";
    ModelConfig& mc = m.config;
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
    Tensors t(dir);
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

}  // namespace

HfModel import_hf(const std::string& dir) {
    const std::string source = "'" + dir + "/config.json'";
    json c;
    try {
        c = json::parse(read_text_file(dir + "/config.json"));
    } catch (const json::exception& e) {
        throw Error(source + " is not valid JSON: " + e.what());
    }
    if (!c.is_object()) throw Error(source + " is not a JSON object");
    std::string arch = c.contains("architectures") && c.at("architectures").is_array() && !c.at("architectures").empty()
                           ? c.at("architectures").at(0).get<std::string>()
                           : "";
    if (arch.empty()) throw Error(source + ": the key 'architectures' is missing");
    try {
        if (arch == "GPT2LMHeadModel") return import_gpt2(dir, c, source);
    } catch (const json::exception& e) {
        throw Error(source + ": unexpected content: " + e.what());
    }
    throw Error(source + ": 'architectures' = " + arch + " is not supported (GPT2LMHeadModel)");
}

}  // namespace arch
