// tests/core/test_hf_export.cpp: `export --safetensors` output loads in Hugging Face transformers as
// GPT2LMHeadModel or LlamaForCausalLM and gives the engine's logits (checked by tests/core/hf_check.py
// in the project's .venv, which scripts/install_deps.sh creates). Also checks the safetensors header
// itself, and that the folder of a native Llama checkpoint loads in transformers as it is.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "core/checkpoint.h"
#include "core/file_io.h"
#include "core/gpt2.h"
#include "core/hf_export.h"
#include "core/llama.h"
#include "core/safetensors.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {
bool engine_logits_match_transformers(Model& model, const TempDir& dir);
}

TEST_CASE("exported safetensors load in transformers and give the engine's logits") {
    TempDir dir;
    const std::string ckpt = "tests/fixtures/gpt2_tiny_model.bin";
    const ModelConfig c = read_checkpoint_config(ckpt);
    const std::vector<float> params = read_checkpoint_params(ckpt, c);
    export_hf_gpt2(dir.path.string(), c, params);

    // The header names the HF tensors with their (in, out) Conv1D shapes.
    const std::string st = read_file_bytes(dir.file("model.safetensors"));
    uint64_t header_size;
    std::memcpy(&header_size, st.data(), 8);
    const std::string header = st.substr(8, header_size);
    CHECK(header.find("\"transformer.h.1.attn.c_attn.weight\":{\"dtype\":\"F32\",\"shape\":[32,96]") != std::string::npos);
    CHECK(header.find("\"transformer.wte.weight\":{\"dtype\":\"F32\",\"shape\":[61,32]") != std::string::npos);

    auto backend = make_cpu_backend();
    GPT2 model(c, *backend);
    model.set_params(params);
    CHECK(engine_logits_match_transformers(model, dir));
}

TEST_CASE("an exported Llama loads in transformers with the engine's logits") {
    auto backend = make_cpu_backend();
    for (const bool tied : {false, true}) {
        INFO("tied " << tied);
        TempDir dir;
        ModelConfig c = model_preset("llama-tiny", 301);
        c.num_layers = 2;
        c.max_seq_len = 32;
        c.tied_embeddings = tied;
        c.rope_theta = tied ? 10000.0f : 500000.0f;
        if (tied) c.rope_scaling = {8.0f, 1.0f, 4.0f, 16};
        std::vector<float> params = llama_init_params(c, 5);
        for (float& x : params) x *= 4.0f;  // livelier logits than HF's 0.02 init gives
        export_hf(dir.path.string(), c, params);
        const SafetensorsFile f(dir.file("model.safetensors"));
        CHECK(f.tensors().at("model.embed_tokens.weight").shape == std::vector<int64_t>{301, 128});
        CHECK(f.tensors().at("model.layers.1.self_attn.k_proj.weight").shape == std::vector<int64_t>{64, 128});
        CHECK(f.tensors().at("model.layers.1.mlp.gate_proj.weight").shape == std::vector<int64_t>{352, 128});
        CHECK(f.has("lm_head.weight") == !tied);
        const std::string config = read_file_bytes(dir.file("config.json"));
        CHECK(config.find(std::string("\"tie_word_embeddings\": ") + (tied ? "true" : "false")) != std::string::npos);
        const auto model = make_transformer(c, *backend);
        model->set_params(params);
        CHECK(engine_logits_match_transformers(*model, dir));

        // The native checkpoint's folder loads as it is (config.json, model.safetensors -> model.bin).
        TempDir native;
        write_checkpoint(native.file("model.bin"), c, params);
        CHECK(engine_logits_match_transformers(*model, native));
    }
}

namespace {
// Writes the engine's logits on fixed tokens into dir/engine_logits.bin and asks hf_check.py to
// compare them with transformers' on the folder.
bool engine_logits_match_transformers(Model& model, const TempDir& dir) {
    const int B = 2, T = 12, V = model.config().vocab_size;
    std::vector<int> tokens(B * T);
    for (int i = 0; i < B * T; ++i) tokens[i] = (i * 17 + 3) % V;
    model.forward(tokens.data(), nullptr, B, T);
    std::ofstream out(dir.file("engine_logits.bin"), std::ios::binary);
    const int32_t dims[3] = {B, T, V};
    out.write(reinterpret_cast<const char*>(dims), sizeof(dims));
    out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * sizeof(int)));
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) {
            const std::vector<float> row = model.logits_at(b, t);
            out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * sizeof(float)));
        }
    out.close();

    const std::string python = ".venv/bin/python";
    INFO("needs " << python << " with transformers: run scripts/install_deps.sh");
    REQUIRE(file_exists(python));
    const std::string command = python + " tests/core/hf_check.py " + dir.path.string();
    return std::system(command.c_str()) == 0;
}
}  // namespace
