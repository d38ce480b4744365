// core/checkpoint.cpp: llm.c checkpoint read/write with full validation; the Llama family's
// safetensors checkpoints are core/checkpoint_safetensors.h's: read by content, written by the family's
// registration (core/model_family.h).
#include "core/checkpoint.h"

#include <cstring>

#include "core/bytes.h"
#include "core/checkpoint_safetensors.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/model_family.h"

namespace arch {

namespace {
constexpr int32_t kMagic = 20240326;
constexpr int32_t kVersionFp32 = 3;
constexpr std::size_t kHeaderBytes = 256 * sizeof(int32_t);

struct Parsed {
    ModelConfig config;
    std::vector<std::byte> bytes;
};

Parsed parse(const std::string& path) {
    Parsed p;
    p.bytes = read_file(path);
    if (p.bytes.size() < kHeaderBytes)
        throw Error("checkpoint '" + path + "' is truncated: " + std::to_string(p.bytes.size()) +
                    " bytes, smaller than its 1024-byte header");
    int32_t h[256];
    for (std::size_t i = 0; i < 256; ++i) h[i] = load_le<int32_t>(p.bytes.data() + 4 * i);
    if (h[0] != kMagic)
        throw Error("'" + path + "' is not an llm.c GPT-2 checkpoint: magic " + std::to_string(h[0]) + ", expected " +
                    std::to_string(kMagic) + " (nor a safetensors one)");
    if (h[1] != kVersionFp32)
        throw Error("checkpoint '" + path + "' has version " + std::to_string(h[1]) +
                    "; only version 3 (fp32) is supported");
    p.config.max_seq_len = h[2];
    p.config.vocab_size = h[3];
    p.config.num_layers = h[4];
    p.config.num_heads = h[5];
    p.config.channels = h[6];
    p.config.padded_vocab_size = h[7];
    try {
        validate(p.config);
    } catch (const Error& e) {
        throw Error("checkpoint '" + path + "' has an impossible header: " + e.what());
    }
    if (p.config.padded_vocab_size % 128 != 0 && p.config.padded_vocab_size != p.config.vocab_size)
        throw Error("checkpoint '" + path + "': padded vocab " + std::to_string(p.config.padded_vocab_size) +
                    " is not a multiple of 128");
    const std::size_t expected = ParamLayout(p.config).num_params();
    const std::size_t held = (p.bytes.size() - kHeaderBytes) / sizeof(float);
    if ((p.bytes.size() - kHeaderBytes) % sizeof(float) != 0 || held != expected)
        throw Error("checkpoint '" + path + "' is " + (held < expected ? "truncated" : "too long") + ": header says " +
                    std::to_string(expected) + " params, file holds " + std::to_string(held));
    return p;
}
}  // namespace

ModelConfig read_checkpoint_config(const std::string& path) {
    if (is_safetensors_file(path)) return read_safetensors_checkpoint_config(path);
    return parse(path).config;
}

std::vector<float> read_checkpoint_params(const std::string& path, const ModelConfig& expected) {
    if (is_safetensors_file(path)) return read_safetensors_checkpoint_params(path, expected);
    Parsed p = parse(path);
    const ModelConfig& c = p.config;
    if (c != expected)
        throw Error("checkpoint '" + path + "' holds a " + describe(c) + " model, expected " + describe(expected));
    ParamLayout layout(c);
    std::vector<float> params(layout.num_params());
    const std::byte* src = p.bytes.data() + kHeaderBytes;
    layout.for_each_in_llmc_order([&](const TensorView& t) {
        std::memcpy(params.data() + t.offset, src, t.size * sizeof(float));
        src += t.size * sizeof(float);
    });
    return params;
}

void write_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params) {
    family_spec(config.family).write_checkpoint(path, config, params);
}

void write_llmc_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params) {
    ParamLayout layout(config);
    if (params.size() != layout.num_params())
        throw Error("write_checkpoint: " + std::to_string(params.size()) + " params given, the model has " +
                    std::to_string(layout.num_params()));
    std::byte h[kHeaderBytes] = {};
    const int32_t fields[] = {kMagic, kVersionFp32, config.max_seq_len, config.vocab_size, config.num_layers,
                              config.num_heads, config.channels, config.padded_vocab_size};
    for (std::size_t i = 0; i < std::size(fields); ++i) store_le(h + 4 * i, fields[i]);
    // The header, then each tensor in llm.c's order, straight from params: no copy of the model.
    std::vector<std::span<const std::byte>> parts = {std::span<const std::byte>(h)};
    layout.for_each_in_llmc_order([&](const TensorView& t) {
        parts.push_back(std::as_bytes(params.subspan(t.offset, t.size)));
    });
    write_file_atomic(path, parts);
}

}  // namespace arch
