// core/checkpoint_safetensors.cpp: the native Llama checkpoint (checkpoint_safetensors.h). Reading
// checks the header whole before any tensor is read: core/safetensors.h's checks (truncation, offsets,
// dtypes), then the metadata's config, then that the tensors are exactly the ones that config has.
#include "core/checkpoint_safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_llama.h"
#include "core/hf_tensors.h"
#include "core/log.h"
#include "core/param_layout.h"
#include "core/safetensors.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFormatKey = "archipelago.checkpoint";
constexpr const char* kFormatVersion = "1";
constexpr const char* kConfigKey = "archipelago.model_config";
constexpr const char* kEmbedPadding = "archipelago.embed_tokens.padding";
constexpr const char* kLmHeadPadding = "archipelago.lm_head.padding";

// Floats are stored as the double of the float, which JSON carries exactly.
std::string config_to_json(const ModelConfig& c) {
    const RopeScaling& r = c.rope_scaling;
    const nlohmann::ordered_json j = {
        {"family", family_name(c.family)},
        {"max_seq_len", c.max_seq_len},
        {"vocab_size", c.vocab_size},
        {"padded_vocab_size", c.padded_vocab_size},
        {"num_layers", c.num_layers},
        {"num_heads", c.num_heads},
        {"channels", c.channels},
        {"num_kv_heads", c.num_kv_heads},
        {"ffn_hidden", c.ffn_hidden},
        {"rope_theta", static_cast<double>(c.rope_theta)},
        {"rope_scaling",
         {{"factor", static_cast<double>(r.factor)},
          {"low_freq_factor", static_cast<double>(r.low_freq_factor)},
          {"high_freq_factor", static_cast<double>(r.high_freq_factor)},
          {"original_max_position", r.original_max_position}}},
        {"norm_eps", static_cast<double>(c.norm_eps)},
        {"tied_embeddings", c.tied_embeddings},
    };
    return j.dump();
}

ModelConfig config_from_json(const std::string& text, const std::string& where) {
    ModelConfig c;
    try {
        const json j = json::parse(text);
        c.family = parse_family(j.at("family").get<std::string>());
        c.max_seq_len = j.at("max_seq_len").get<int>();
        c.vocab_size = j.at("vocab_size").get<int>();
        c.padded_vocab_size = j.at("padded_vocab_size").get<int>();
        c.num_layers = j.at("num_layers").get<int>();
        c.num_heads = j.at("num_heads").get<int>();
        c.channels = j.at("channels").get<int>();
        c.num_kv_heads = j.at("num_kv_heads").get<int>();
        c.ffn_hidden = j.at("ffn_hidden").get<int>();
        c.rope_theta = static_cast<float>(j.at("rope_theta").get<double>());
        const json& r = j.at("rope_scaling");
        c.rope_scaling.factor = static_cast<float>(r.at("factor").get<double>());
        c.rope_scaling.low_freq_factor = static_cast<float>(r.at("low_freq_factor").get<double>());
        c.rope_scaling.high_freq_factor = static_cast<float>(r.at("high_freq_factor").get<double>());
        c.rope_scaling.original_max_position = r.at("original_max_position").get<int>();
        c.norm_eps = static_cast<float>(j.at("norm_eps").get<double>());
        c.tied_embeddings = j.at("tied_embeddings").get<bool>();
    } catch (const json::exception& e) {
        throw Error(where + ": its model config (" + kConfigKey + ") is malformed: " + e.what());
    }
    if (c.family != ModelFamily::llama)
        throw Error(where + " holds a " + family_name(c.family) + " model; only the Llama family is stored as safetensors");
    try {
        validate(c);
    } catch (const Error& e) {
        throw Error(where + " has an impossible model config: " + e.what());
    }
    if (c.padded_vocab_size % 128 != 0 && c.padded_vocab_size != c.vocab_size)
        throw Error(where + ": padded vocab " + std::to_string(c.padded_vocab_size) + " is not a multiple of 128");
    return c;
}

// The config from the metadata, after checking the file holds exactly that model's tensors, in fp32.
ModelConfig parse(const SafetensorsFile& f) {
    const std::string where = "checkpoint '" + f.path() + "'";
    const auto& meta = f.metadata();
    const auto format = meta.find(kFormatKey);
    if (format == meta.end() || meta.count(kConfigKey) == 0)
        throw Error(where + " is a safetensors file without Archipelago's model config in its metadata (" +
                    kConfigKey + "); for a Hugging Face folder use `archipelago import --hf`");
    if (format->second != kFormatVersion)
        throw Error(where + " has checkpoint format " + format->second + "; this build reads " + kFormatVersion);
    const ModelConfig c = config_from_json(meta.at(kConfigKey), where);
    std::map<std::string, std::vector<int64_t>> want;
    for (auto& [name, shape] : llama_hf_shapes(c)) want[name] = shape;
    const int64_t padding = c.padded_vocab_size - c.vocab_size;
    for (const auto& [name, t] : f.tensors()) {
        std::vector<int64_t> shape;
        if (name == kEmbedPadding || (name == kLmHeadPadding && !c.tied_embeddings)) {
            shape = {padding, c.channels};
        } else if (want.count(name)) {
            shape = want[name];
        } else {
            throw Error(where + ": the tensor '" + name + "' is not part of the " + describe(c) + " model its metadata describes");
        }
        if (t.shape != shape) throw Error(where + ": tensor '" + name + "' has shape " + shape_text(t.shape) + ", expected " + shape_text(shape));
        if (t.dtype != "F32") throw Error(where + ": tensor '" + name + "' is " + t.dtype + "; checkpoints are F32");
    }
    for (const auto& [name, shape] : want)
        if (!f.has(name)) throw Error(where + ": the tensor '" + name + "' is missing");
    return c;
}

// The rows V..Vp of a (Vp, C) tensor, or nothing when they are all zero.
std::vector<float> padded_rows(std::span<const float> params, std::size_t offset, const ModelConfig& c) {
    const std::size_t C = static_cast<std::size_t>(c.channels);
    const float* begin = params.data() + offset + static_cast<std::size_t>(c.vocab_size) * C;
    const float* end = params.data() + offset + static_cast<std::size_t>(c.padded_vocab_size) * C;
    if (std::all_of(begin, end, [](float x) { return x == 0.0f && !std::signbit(x); })) return {};
    return std::vector<float>(begin, end);
}

// transformers looks for model.safetensors: a link of that name to the checkpoint, unless the folder
// has a real file of that name (someone's own, left alone). A convenience, so a failure only warns.
void link_for_transformers(const fs::path& file) {
    if (file.filename() == "model.safetensors") return;
    const fs::path link = file.parent_path() / "model.safetensors", tmp = link.string() + ".tmp";
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(link, ec);
    if (fs::exists(st) && !fs::is_symlink(st)) return;
    fs::remove(tmp, ec);
    fs::create_symlink(file.filename(), tmp, ec);
    if (!ec) fs::rename(tmp, link, ec);
    if (ec) log::get("checkpoint")->warn("could not link {} to {}: {}", link.string(), file.filename().string(), ec.message());
}

}  // namespace

bool is_safetensors_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char head[9];
    if (!in.read(reinterpret_cast<char*>(head), sizeof head)) return false;
    uint64_t header = 0;
    std::memcpy(&header, head, 8);
    return header >= 2 && header <= (100u << 20) && head[8] == '{';
}

ModelConfig read_safetensors_checkpoint_config(const std::string& path) { return parse(SafetensorsFile(path)); }

std::vector<float> read_safetensors_checkpoint_params(const std::string& path, const ModelConfig& expected) {
    HfTensors tensors = HfTensors::file(path);
    const ModelConfig c = parse(SafetensorsFile(path));
    if (c != expected)
        throw Error("checkpoint '" + path + "' holds a " + describe(c) + " model, expected " + describe(expected));
    std::vector<float> params = llama_params_from_hf(c, tensors);
    const ParamLayout layout(c);
    const int64_t padding = c.padded_vocab_size - c.vocab_size;
    const std::size_t first_pad = static_cast<std::size_t>(c.vocab_size) * c.channels;
    auto put_padding = [&](const char* name, std::size_t offset) {
        if (!tensors.has(name)) return;
        const std::vector<float> rows = tensors.read(name, {padding, c.channels});
        std::copy(rows.begin(), rows.end(), params.begin() + static_cast<std::ptrdiff_t>(offset + first_pad));
    };
    put_padding(kEmbedPadding, layout.wte());
    if (!c.tied_embeddings) put_padding(kLmHeadPadding, layout.lm_head());
    tensors.check_all_used({});
    return params;
}

void write_safetensors_checkpoint(const std::string& path, const ModelConfig& c, std::span<const float> params) {
    if (c.family != ModelFamily::llama) throw Error("write_safetensors_checkpoint: the model is a " + describe(c));
    std::vector<SafeTensorOut> tensors = llama_hf_tensors(c, params);  // checks the size
    const ParamLayout layout(c);
    const int padding = c.padded_vocab_size - c.vocab_size;
    if (std::vector<float> rows = padded_rows(params, layout.wte(), c); !rows.empty())
        tensors.push_back({kEmbedPadding, {padding, c.channels}, std::move(rows)});
    if (!c.tied_embeddings)
        if (std::vector<float> rows = padded_rows(params, layout.lm_head(), c); !rows.empty())
            tensors.push_back({kLmHeadPadding, {padding, c.channels}, std::move(rows)});
    write_safetensors(path, tensors, {{kFormatKey, kFormatVersion}, {kConfigKey, config_to_json(c)}});
    const fs::path file(path);
    write_text_file_atomic((file.parent_path() / "config.json").string(), llama_hf_config_json(c));
    link_for_transformers(file);
}

}  // namespace arch
