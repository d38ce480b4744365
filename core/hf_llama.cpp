// core/hf_llama.cpp: LlamaForCausalLM's tensor names and config.json (hf_llama.h). One table of the
// block's tensors (HF name, rows, where they go in our tensor) serves both directions.
#include "core/hf_llama.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/param_layout.h"

namespace arch {
namespace {

// One HF tensor of a block: `rows` rows of C_in values each, starting at row `first_row` of our tensor.
struct BlockPart {
    std::string name;
    std::size_t offset;  // of our tensor in the flat buffer
    int first_row, rows, cols;
};

std::vector<BlockPart> block_parts(const ModelConfig& c, const BlockOffsets& o, int layer) {
    const int C = c.channels, F = c.ffn_hidden, hs = head_size(c), q = c.num_heads * hs, kv = c.num_kv_heads * hs;
    const std::string h = "model.layers." + std::to_string(layer) + ".";
    return {
        {h + "input_layernorm.weight", o.ln1w, 0, 1, C},
        {h + "self_attn.q_proj.weight", o.qkvw, 0, q, C},
        {h + "self_attn.k_proj.weight", o.qkvw, q, kv, C},
        {h + "self_attn.v_proj.weight", o.qkvw, q + kv, kv, C},
        {h + "self_attn.o_proj.weight", o.attprojw, 0, C, q},
        {h + "post_attention_layernorm.weight", o.ln2w, 0, 1, C},
        {h + "mlp.gate_proj.weight", o.fcw, 0, F, C},
        {h + "mlp.up_proj.weight", o.fcw, F, F, C},
        {h + "mlp.down_proj.weight", o.fcprojw, 0, C, F},
    };
}

// The HF shape of a part: a vector for the norms, (rows, cols) for the rest.
std::vector<int> part_shape(const BlockPart& p) { return p.rows == 1 ? std::vector<int>{p.cols} : std::vector<int>{p.rows, p.cols}; }

std::span<const float> rows_of(std::span<const float> params, std::size_t offset, int first_row, int rows, int cols) {
    return params.subspan(offset + static_cast<std::size_t>(first_row) * cols, static_cast<std::size_t>(rows) * cols);
}

}  // namespace

std::vector<SafeTensorOut> llama_hf_tensors(const ModelConfig& c, std::span<const float> params) {
    const ParamLayout layout(c);
    if (params.size() != layout.num_params())
        throw Error("Llama tensors: " + std::to_string(params.size()) + " params given, the model has " +
                    std::to_string(layout.num_params()));
    const int C = c.channels, V = c.vocab_size;
    std::vector<SafeTensorOut> out;
    out.push_back({"model.embed_tokens.weight", {V, C}, {}, rows_of(params, layout.wte(), 0, V, C)});
    for (int l = 0; l < c.num_layers; ++l)
        for (const BlockPart& p : block_parts(c, layout.block(l), l))
            out.push_back({p.name, part_shape(p), {}, rows_of(params, p.offset, p.first_row, p.rows, p.cols)});
    out.push_back({"model.norm.weight", {C}, {}, rows_of(params, layout.lnfw(), 0, 1, C)});
    if (!c.tied_embeddings) out.push_back({"lm_head.weight", {V, C}, {}, rows_of(params, layout.lm_head(), 0, V, C)});
    return out;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> llama_hf_shapes(const ModelConfig& c) {
    const ParamLayout layout(c);
    const int64_t C = c.channels, V = c.vocab_size;
    std::vector<std::pair<std::string, std::vector<int64_t>>> out;
    out.push_back({"model.embed_tokens.weight", {V, C}});
    for (int l = 0; l < c.num_layers; ++l)
        for (const BlockPart& p : block_parts(c, layout.block(l), l)) {
            const std::vector<int> s = part_shape(p);
            out.push_back({p.name, std::vector<int64_t>(s.begin(), s.end())});
        }
    out.push_back({"model.norm.weight", {C}});
    if (!c.tied_embeddings) out.push_back({"lm_head.weight", {V, C}});
    return out;
}

std::vector<float> llama_params_from_hf(const ModelConfig& c, HfTensors& t) {
    const ParamLayout layout(c);
    std::vector<float> params(layout.num_params(), 0.0f);
    const int C = c.channels, V = c.vocab_size;
    auto put = [&](std::size_t offset, int first_row, const std::vector<float>& v, int cols) {
        std::copy(v.begin(), v.end(), params.begin() + static_cast<std::ptrdiff_t>(offset + static_cast<std::size_t>(first_row) * cols));
    };
    const std::vector<float> embed = t.read("model.embed_tokens.weight", {V, C});
    put(layout.wte(), 0, embed, C);  // rows V..Vp stay zero
    for (int l = 0; l < c.num_layers; ++l)
        for (const BlockPart& p : block_parts(c, layout.block(l), l)) {
            const std::vector<int> s = part_shape(p);
            put(p.offset, p.first_row, t.read(p.name, std::vector<int64_t>(s.begin(), s.end())), p.cols);
        }
    put(layout.lnfw(), 0, t.read("model.norm.weight", {C}), C);
    if (!c.tied_embeddings) {
        put(layout.lm_head(), 0, t.read("lm_head.weight", {V, C}), C);
    } else if (t.has("lm_head.weight") && t.read("lm_head.weight", {V, C}) != embed) {
        throw Error("'" + t.source() + "': lm_head.weight differs from model.embed_tokens.weight, but the config ties them "
                    "(tie_word_embeddings)");
    }
    return params;
}

double shortest_decimal(float x) {
    char buf[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(x));
        if (std::strtof(buf, nullptr) == x) break;
    }
    return std::strtod(buf, nullptr);
}

std::string llama_hf_config_json(const ModelConfig& c) {
    nlohmann::ordered_json rope_scaling = nullptr;
    if (c.rope_scaling.factor != 0.0f)
        rope_scaling = {
            {"rope_type", "llama3"},
            {"factor", shortest_decimal(c.rope_scaling.factor)},
            {"low_freq_factor", shortest_decimal(c.rope_scaling.low_freq_factor)},
            {"high_freq_factor", shortest_decimal(c.rope_scaling.high_freq_factor)},
            {"original_max_position_embeddings", c.rope_scaling.original_max_position},
        };
    const nlohmann::ordered_json config = {
        {"architectures", {"LlamaForCausalLM"}},
        {"model_type", "llama"},
        {"vocab_size", c.vocab_size},
        {"hidden_size", c.channels},
        {"intermediate_size", c.ffn_hidden},
        {"num_hidden_layers", c.num_layers},
        {"num_attention_heads", c.num_heads},
        {"num_key_value_heads", c.num_kv_heads},
        {"head_dim", head_size(c)},
        {"max_position_embeddings", c.max_seq_len},
        {"hidden_act", "silu"},
        {"rms_norm_eps", shortest_decimal(c.norm_eps)},
        {"rope_theta", shortest_decimal(c.rope_theta)},
        {"rope_scaling", rope_scaling},
        {"attention_bias", false},
        {"attention_dropout", 0.0},
        {"mlp_bias", false},
        {"tie_word_embeddings", c.tied_embeddings},
        {"torch_dtype", "float32"},
    };
    return config.dump(2) + "\n";
}

}  // namespace arch
