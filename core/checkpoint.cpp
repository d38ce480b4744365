// core/checkpoint.cpp: llm.c checkpoint read/write with full validation; the Llama family's
// safetensors checkpoints are core/checkpoint_safetensors.h's, picked here by family and by content.
#include "core/checkpoint.h"

#include <cstring>

#include "core/checkpoint_safetensors.h"
#include "core/error.h"
#include "core/file_io.h"

namespace arch {

namespace {
constexpr int32_t kMagic = 20240326;
constexpr int32_t kVersionFp32 = 3;
constexpr std::size_t kHeaderBytes = 256 * sizeof(int32_t);

struct Parsed {
    ModelConfig config;
    std::vector<uint8_t> bytes;
};

Parsed parse(const std::string& path) {
    Parsed p;
    p.bytes = read_file(path);
    if (p.bytes.size() < kHeaderBytes)
        throw Error("checkpoint '" + path + "' is truncated: " + std::to_string(p.bytes.size()) +
                    " bytes, smaller than its 1024-byte header");
    int32_t h[256];
    std::memcpy(h, p.bytes.data(), kHeaderBytes);
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
    const uint8_t* src = p.bytes.data() + kHeaderBytes;
    layout.for_each_in_llmc_order([&](const TensorView& t) {
        std::memcpy(params.data() + t.offset, src, t.size * sizeof(float));
        src += t.size * sizeof(float);
    });
    return params;
}

void write_checkpoint(const std::string& path, const ModelConfig& config, std::span<const float> params) {
    if (config.family == ModelFamily::llama) return write_safetensors_checkpoint(path, config, params);
    ParamLayout layout(config);
    if (params.size() != layout.num_params())
        throw Error("write_checkpoint: " + std::to_string(params.size()) + " params given, the model has " +
                    std::to_string(layout.num_params()));
    int32_t h[256] = {};
    h[0] = kMagic;
    h[1] = kVersionFp32;
    h[2] = config.max_seq_len;
    h[3] = config.vocab_size;
    h[4] = config.num_layers;
    h[5] = config.num_heads;
    h[6] = config.channels;
    h[7] = config.padded_vocab_size;
    // The header, then each tensor in llm.c's order, straight from params: no copy of the model.
    std::vector<std::span<const uint8_t>> parts = {std::span(reinterpret_cast<const uint8_t*>(h), kHeaderBytes)};
    layout.for_each_in_llmc_order([&](const TensorView& t) {
        parts.push_back(std::span(reinterpret_cast<const uint8_t*>(params.data() + t.offset), t.size * sizeof(float)));
    });
    write_file_atomic(path, parts);
}

}  // namespace arch
