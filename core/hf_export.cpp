// core/hf_export.cpp: the GPT-2 tensors under Hugging Face's names (core/safetensors.h writes them)
// and the GPT-2 config.json for transformers. Both JSON texts are nlohmann::ordered_json, so their
// fields keep the order written here.
#include "core/hf_export.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_llama.h"
#include "core/model_family.h"
#include "core/param_layout.h"
#include "core/safetensors.h"

namespace arch {

namespace {

std::vector<float> copied(const float* src, std::size_t n) { return std::vector<float>(src, src + n); }

std::string config_json(const ModelConfig& c) {
    const nlohmann::ordered_json config = {
        {"architectures", {"GPT2LMHeadModel"}},
        {"model_type", "gpt2"},
        {"activation_function", "gelu_new"},
        {"vocab_size", c.vocab_size},
        {"n_positions", c.max_seq_len},
        {"n_ctx", c.max_seq_len},
        {"n_embd", c.channels},
        {"n_layer", c.num_layers},
        {"n_head", c.num_heads},
        {"layer_norm_epsilon", 1e-05},
        {"resid_pdrop", 0.0},
        {"embd_pdrop", 0.0},
        {"attn_pdrop", 0.0},
        {"tie_word_embeddings", true},
        {"torch_dtype", "float32"},
    };
    return config.dump(2) + "\n";
}

void make_folder(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        throw Error("cannot create folder '" + dir + "': " + std::strerror(errno));
}

}  // namespace

std::vector<float> transposed(const float* src, int rows, int cols) {
    std::vector<float> out(static_cast<std::size_t>(rows) * cols);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) out[static_cast<std::size_t>(c) * rows + r] = src[static_cast<std::size_t>(r) * cols + c];
    return out;
}

void export_hf_gpt2(const std::string& dir, const ModelConfig& c, std::span<const float> params) {
    if (c.family != ModelFamily::gpt2) throw Error("export_hf_gpt2: the model is a " + describe(c));
    ParamLayout layout(c);
    if (params.size() != layout.num_params())
        throw Error("export: " + std::to_string(params.size()) + " params given, the model has " +
                    std::to_string(layout.num_params()));
    make_folder(dir);
    const int C = c.channels;
    const float* p = params.data();
    std::vector<SafeTensorOut> entries;
    entries.push_back({"transformer.wte.weight", {c.vocab_size, C}, copied(p + layout.wte(), static_cast<std::size_t>(c.vocab_size) * C)});
    entries.push_back({"transformer.wpe.weight", {c.max_seq_len, C}, copied(p + layout.wpe(), static_cast<std::size_t>(c.max_seq_len) * C)});
    for (int l = 0; l < c.num_layers; ++l) {
        const BlockOffsets& o = layout.block(l);
        const std::string h = "transformer.h." + std::to_string(l) + ".";
        entries.push_back({h + "ln_1.weight", {C}, copied(p + o.ln1w, C)});
        entries.push_back({h + "ln_1.bias", {C}, copied(p + o.ln1b, C)});
        entries.push_back({h + "attn.c_attn.weight", {C, 3 * C}, transposed(p + o.qkvw, 3 * C, C)});
        entries.push_back({h + "attn.c_attn.bias", {3 * C}, copied(p + o.qkvb, 3 * C)});
        entries.push_back({h + "attn.c_proj.weight", {C, C}, transposed(p + o.attprojw, C, C)});
        entries.push_back({h + "attn.c_proj.bias", {C}, copied(p + o.attprojb, C)});
        entries.push_back({h + "ln_2.weight", {C}, copied(p + o.ln2w, C)});
        entries.push_back({h + "ln_2.bias", {C}, copied(p + o.ln2b, C)});
        entries.push_back({h + "mlp.c_fc.weight", {C, 4 * C}, transposed(p + o.fcw, 4 * C, C)});
        entries.push_back({h + "mlp.c_fc.bias", {4 * C}, copied(p + o.fcb, 4 * C)});
        entries.push_back({h + "mlp.c_proj.weight", {4 * C, C}, transposed(p + o.fcprojw, C, 4 * C)});
        entries.push_back({h + "mlp.c_proj.bias", {C}, copied(p + o.fcprojb, C)});
    }
    entries.push_back({"transformer.ln_f.weight", {C}, copied(p + layout.lnfw(), C)});
    entries.push_back({"transformer.ln_f.bias", {C}, copied(p + layout.lnfb(), C)});
    write_safetensors(dir + "/model.safetensors", entries);
    const std::string json = config_json(c);
    write_text_file_atomic(dir + "/config.json", json);
}

void export_hf_llama(const std::string& dir, const ModelConfig& c, std::span<const float> params) {
    if (c.family != ModelFamily::llama) throw Error("export_hf_llama: the model is a " + describe(c));
    const std::vector<SafeTensorOut> tensors = llama_hf_tensors(c, params);  // checks the size first
    make_folder(dir);
    write_safetensors(dir + "/model.safetensors", tensors);
    write_text_file_atomic(dir + "/config.json", llama_hf_config_json(c));
}

void export_hf(const std::string& dir, const ModelConfig& c, std::span<const float> params) {
    family_spec(c.family).export_hf(dir, c, params);
}

}  // namespace arch
