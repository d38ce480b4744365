// tests/core/test_checkpoint.cpp: llm.c checkpoints round-trip in llm.c order; truncated, corrupt,
// oversized or mismatched files are refused with a message naming the problem, and a failed write
// never replaces a good file. The Llama family's safetensors checkpoints round-trip bit-exactly
// (config, Vp, padded rows; tied and untied), whatever the file is called, with config.json and a
// model.safetensors link beside them; truncated or lying ones are refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/hf_import.h"
#include "core/rng.h"
#include "core/safetensors.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {
ModelConfig config() { return model_preset("tiny", 300); }

std::vector<float> random_params(const ModelConfig& c) {
    std::vector<float> p(ParamLayout(c).num_params());
    Rng rng(3);
    for (float& x : p) x = rng.normal();
    return p;
}
}  // namespace

TEST_CASE("a checkpoint round-trips and is laid out in llm.c order") {
    TempDir dir;
    const ModelConfig c = config();
    const std::vector<float> params = random_params(c);
    write_checkpoint(dir.file("m.bin"), c, params);
    const ModelConfig back = read_checkpoint_config(dir.file("m.bin"));
    CHECK(back.channels == c.channels);
    CHECK(back.padded_vocab_size == 384);
    CHECK(read_checkpoint_params(dir.file("m.bin"), c) == params);
    // llm.c order: wte first, then wpe, then ln1w of every layer.
    const std::string bytes = read_file_bytes(dir.file("m.bin"));
    const ParamLayout layout(c);
    float first;
    std::memcpy(&first, bytes.data() + 1024, sizeof(float));
    CHECK(first == params[layout.wte()]);
    float ln1w_layer1;
    const std::size_t index = static_cast<std::size_t>(c.padded_vocab_size) * c.channels +
                              static_cast<std::size_t>(c.max_seq_len) * c.channels + c.channels;  // wte, wpe, ln1w[0]
    std::memcpy(&ln1w_layer1, bytes.data() + 1024 + index * sizeof(float), sizeof(float));
    CHECK(ln1w_layer1 == params[layout.block(1).ln1w]);
}

TEST_CASE("bad checkpoints are refused with a clear message") {
    TempDir dir;
    const ModelConfig c = config();
    write_checkpoint(dir.file("m.bin"), c, random_params(c));
    const std::string good = read_file_bytes(dir.file("m.bin"));

    write_file(dir.file("truncated.bin"), good.substr(0, good.size() - 100));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("truncated.bin")), Catch::Contains("is truncated"));
    write_file(dir.file("short.bin"), good.substr(0, 512));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("short.bin")), Catch::Contains("is truncated"));
    write_file(dir.file("long.bin"), good + "xxxx");
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("long.bin")), Catch::Contains("too long"));
    std::string magic = good;
    magic[0] ^= 0x55;
    write_file(dir.file("magic.bin"), magic);
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("magic.bin")), Catch::Contains("not an llm.c GPT-2 checkpoint"));
    std::string version = good;
    version[4] = 5;  // bf16 (version 5) is not read
    write_file(dir.file("version.bin"), version);
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("version.bin")), Catch::Contains("version 5"));
    std::string heads = good;
    const int32_t three = 3;
    std::memcpy(heads.data() + 5 * 4, &three, 4);  // NH = 3 does not divide C = 128
    write_file(dir.file("heads.bin"), heads);
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("heads.bin")), Catch::Contains("not divisible"));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("missing.bin")), Catch::Contains("cannot open"));
    ModelConfig other = c;
    other.num_layers = 2;
    CHECK_THROWS_WITH(read_checkpoint_params(dir.file("m.bin"), other), Catch::Contains("expected"));
}

TEST_CASE("a failed checkpoint write leaves the existing file untouched") {
    TempDir dir;
    const ModelConfig c = config();
    write_checkpoint(dir.file("m.bin"), c, random_params(c));
    const std::string before = read_file_bytes(dir.file("m.bin"));
    CHECK_THROWS_AS(write_checkpoint(dir.file("m.bin"), c, std::vector<float>(10)), Error);
    CHECK_THROWS_AS(write_checkpoint(dir.file("no_such_dir/m.bin"), c, random_params(c)), Error);
    CHECK(read_file_bytes(dir.file("m.bin")) == before);
}

namespace {
// A Llama with every field away from its default, so a field lost on the way shows.
ModelConfig llama_config(bool tied) {
    ModelConfig c = model_preset("llama-tiny", 300);
    c.num_layers = 2;
    c.rope_theta = 500000.0f;
    c.norm_eps = 1e-6f;
    c.rope_scaling = {8.0f, 1.0f, 4.0f, 64};
    c.tied_embeddings = tied;
    return c;
}
}  // namespace

TEST_CASE("a Llama checkpoint is safetensors and round-trips bit-exactly") {
    for (const bool tied : {true, false}) {
        for (const bool zero_padding : {true, false}) {
            INFO("tied " << tied << ", zero padded rows " << zero_padding);
            TempDir dir;
            const ModelConfig c = llama_config(tied);
            const ParamLayout layout(c);
            std::vector<float> params = random_params(c);
            if (zero_padding)
                for (const std::size_t at : {layout.wte(), layout.lm_head()})
                    std::fill_n(params.begin() + static_cast<std::ptrdiff_t>(at + std::size_t{300} * c.channels),
                                (c.padded_vocab_size - 300) * c.channels, 0.0f);
            write_checkpoint(dir.file("m.bin"), c, params);  // named .bin: the content decides
            CHECK(read_checkpoint_config(dir.file("m.bin")) == c);
            CHECK(read_checkpoint_params(dir.file("m.bin"), c) == params);
            const SafetensorsFile f(dir.file("m.bin"));
            CHECK(f.has("model.layers.1.self_attn.k_proj.weight"));
            CHECK(f.has("lm_head.weight") == !tied);
            CHECK(f.has("archipelago.embed_tokens.padding") == !zero_padding);
            CHECK(f.tensors().at("model.embed_tokens.weight").shape == std::vector<int64_t>{300, c.channels});
            // The folder loads in transformers: config.json, and model.safetensors naming the file.
            CHECK(read_file_bytes(dir.file("config.json")).find("\"LlamaForCausalLM\"") != std::string::npos);
            CHECK(std::filesystem::is_symlink(dir.file("model.safetensors")));
            CHECK(read_file_bytes(dir.file("model.safetensors")) == read_file_bytes(dir.file("m.bin")));
            // And it imports as a Hugging Face folder, the same model (padded rows aside).
            const HfModel hf = import_hf(dir.path.string());
            CHECK(hf.config == c);
            if (zero_padding) CHECK(hf.params == params);
            ModelConfig other = c;
            other.rope_scaling.factor = 4.0f;
            CHECK_THROWS_WITH(read_checkpoint_params(dir.file("m.bin"), other), Catch::Contains("expected llama"));
        }
    }
}

TEST_CASE("bad Llama checkpoints are refused with a clear message") {
    TempDir dir;
    const ModelConfig c = llama_config(false);
    write_checkpoint(dir.file("m.bin"), c, random_params(c));
    const std::string good = read_file_bytes(dir.file("m.bin"));
    write_file(dir.file("truncated.bin"), good.substr(0, good.size() - 100));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("truncated.bin")), Catch::Contains("truncated"));
    CHECK_THROWS_WITH(read_checkpoint_params(dir.file("truncated.bin"), c), Catch::Contains("truncated"));
    write_file(dir.file("short.bin"), good.substr(0, 4000));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("short.bin")), Catch::Contains("truncated"));
    // Metadata that lies: a third layer the tensors do not have.
    uint64_t header = 0;
    std::memcpy(&header, good.data(), 8);
    std::string head = good.substr(8, header);
    const std::string key = "\\\"num_layers\\\":";  // the config is a JSON string inside the header
    const std::size_t at = head.find(key + "2");
    REQUIRE(at != std::string::npos);
    head[at + key.size()] = '3';
    write_file(dir.file("lying.bin"), good.substr(0, 8) + head + good.substr(8 + header));
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("lying.bin")), Catch::Contains("the tensor 'model.layers.2.input_layernorm.weight' is missing"));
    // A Hugging Face safetensors file is not a checkpoint: no config in its metadata.
    write_safetensors(dir.file("hf.safetensors"), {{"model.norm.weight", {4}, std::vector<float>(4, 1.0f)}});
    CHECK_THROWS_WITH(read_checkpoint_config(dir.file("hf.safetensors")), Catch::Contains("without Archipelago's model config"));
}
