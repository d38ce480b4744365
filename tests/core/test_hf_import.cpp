// tests/core/test_hf_import.cpp: Hugging Face folders made by transformers (tests/core/hf_make_models.py
// and hf_make_llama.py, run from .venv) imported: a random GPT2LMHeadModel saved in fp32, in shards,
// in fp16 and in bf16, and random LlamaForCausalLMs (GQA and untied in fp32, bf16 and shards; tied
// with Llama 3's rope scaling; both with transformers 5.x's rope_parameters) give transformers'
// logits to 1e-4 relative, and 10 AdamW steps give torch's losses to 1e-4. A Llama goes through
// `archipelago import` (the native checkpoint), `train --init`/`--init-hf` and `export` back to
// transformers' tensors. Then the bad inputs: a truncated safetensors file, a header whose offsets
// lie, an unknown dtype, a config.json missing a key or asking for what is not built, a missing,
// misshapen or unknown tensor, a shard outside the folder; each a clear error, and `archipelago
// import` writes nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/gpt2.h"
#include "core/hf_import.h"
#include "core/safetensors.h"
#include "core/token_shard.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/core/temp_dir.h"

using namespace arch;
namespace fs = std::filesystem;

namespace {

struct Made {
    TempDir dir;
    int B = 0, T = 0;
    std::vector<int> tokens;  // B x (T + 1)
    explicit Made(const std::string& script = "tests/core/hf_make_models.py") {
        const std::string python = ".venv/bin/python";
        INFO("needs " << python << " with transformers: run scripts/install_deps.sh");
        REQUIRE(file_exists(python));
        REQUIRE(std::system((python + " " + script + " " + dir.path.string()).c_str()) == 0);
        const std::string raw = read_file_bytes(dir.file("tokens.bin"));
        std::memcpy(&B, raw.data(), 4);
        std::memcpy(&T, raw.data() + 4, 4);
        tokens.resize(static_cast<std::size_t>(B) * (T + 1));
        std::memcpy(tokens.data(), raw.data() + 8, tokens.size() * 4);
    }
    void batch(std::vector<int>& in, std::vector<int>& out) const {
        in.clear(), out.clear();
        for (int b = 0; b < B; ++b)
            for (int t = 0; t < T; ++t) {
                in.push_back(tokens[b * (T + 1) + t]);
                out.push_back(tokens[b * (T + 1) + t + 1]);
            }
    }
};

std::string replaced(std::string text, const std::string& what, const std::string& with) {
    const std::size_t at = text.find(what);
    REQUIRE(at != std::string::npos);
    return text.replace(at, what.size(), with);
}

// The largest |engine - transformers| logit over the batch, relative to the largest |logit|.
double worst_relative_logit(Model& model, const Made& m, const std::string& folder) {
    std::vector<int> in, out;
    m.batch(in, out);
    model.forward(in.data(), nullptr, m.B, m.T);
    const std::string raw = read_file_bytes(folder + "/logits.bin");
    const int V = model.config().vocab_size;
    REQUIRE(raw.size() == static_cast<std::size_t>(m.B) * m.T * V * 4);
    std::vector<float> want(raw.size() / 4);
    std::memcpy(want.data(), raw.data(), raw.size());
    double worst = 0, largest = 0;
    for (int b = 0; b < m.B; ++b)
        for (int t = 0; t < m.T; ++t) {
            const std::vector<float> row = model.logits_at(b, t);
            for (int v = 0; v < V; ++v) {
                const float w = want[(static_cast<std::size_t>(b) * m.T + t) * V + v];
                worst = std::max(worst, static_cast<double>(std::abs(row[v] - w)));
                largest = std::max(largest, static_cast<double>(std::abs(w)));
            }
        }
    return worst / largest;
}

// The largest relative difference of 10 engine AdamW steps' losses from torch's (adamw_losses.txt).
double worst_relative_loss(Model& model, const Made& m, const std::string& folder) {
    std::vector<int> in, out;
    m.batch(in, out);
    std::vector<double> theirs;
    std::istringstream lines(read_text_file(folder + "/adamw_losses.txt"));
    for (double x; lines >> x;) theirs.push_back(x);
    REQUIRE(theirs.size() == 10);
    AdamWConfig adamw;  // betas 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors, clip 1.0
    double worst = 0;
    for (int step = 0; step < 10; ++step) {
        model.zero_grad();
        const float loss = model.forward(in.data(), out.data(), m.B, m.T);
        model.backward();
        model.adamw_step(1e-3f, adamw);
        worst = std::max(worst, std::abs(loss - theirs[step]) / theirs[step]);
    }
    return worst;
}

int archipelago(const std::string& args) {
    const char* bin = std::getenv("ARCH_BIN_DIR");
    REQUIRE(bin);
    return std::system((std::string(bin) + "/archipelago " + args + " > /dev/null 2>&1").c_str());
}

// A folder of a model.safetensors and a config.json, for the bad-input cases.
std::string write_folder(const Made& m, const std::string& name, const std::string& safetensors,
                         const std::string& json) {
    const std::string d = m.dir.file(name);
    fs::create_directories(d);
    write_file(d + "/model.safetensors", safetensors);
    write_file(d + "/config.json", json);
    return d;
}

// import_hf refuses the folder with `message`, and `archipelago import` fails and writes nothing.
void refused(const std::string& d, const std::string& message) {
    INFO(d);
    CHECK_THROWS_WITH(import_hf(d), Catch::Contains(message));
    const std::string out = d + "/out.bin";
    CHECK(archipelago("import --hf " + d + " --out " + out) != 0);
    CHECK_FALSE(file_exists(out));
}

}  // namespace

TEST_CASE("a GPT2LMHeadModel from transformers, in fp32, shards, fp16 and bf16: its logits, and torch's AdamW losses") {
    Made m;
    auto backend = make_cpu_backend();
    for (const std::string name : {"gpt2-fp32", "gpt2-sharded", "gpt2-fp16", "gpt2-bf16"}) {
        INFO(name);
        const HfModel hf = import_hf(m.dir.file(name));
        CHECK(hf.architecture == "GPT2LMHeadModel");
        CHECK(describe(hf.config) == "L2 C64 NH4 T32 V301 (Vp 384)");
        GPT2 model(hf.config, *backend);
        model.set_params(hf.params);
        const double worst = worst_relative_logit(model, m, m.dir.file(name));
        INFO("worst logit error " << worst << " of the largest logit");
        CHECK(worst <= 1e-4);
    }
    // 10 AdamW steps, the engine's own optimizer at torch's settings, against torch's losses.
    const HfModel hf = import_hf(m.dir.file("gpt2-fp32"));
    GPT2 model(hf.config, *backend);
    model.set_params(hf.params);
    const double worst = worst_relative_loss(model, m, m.dir.file("gpt2-fp32"));
    INFO("10 AdamW steps, worst loss difference " << worst << " relative to torch's");
    CHECK(worst <= 1e-4);
}

TEST_CASE("bad Hugging Face folders are refused with the file and key named; import writes nothing") {
    Made m;
    const std::string good = m.dir.file("gpt2-fp32");
    const std::string st = read_file_bytes(good + "/model.safetensors"), config = read_text_file(good + "/config.json");
    auto folder = [&](const std::string& name, const std::string& safetensors, const std::string& json) {
        return write_folder(m, name, safetensors, json);
    };
    uint64_t header = 0;
    std::memcpy(&header, st.data(), 8);
    const std::string head = st.substr(8, header);
    refused(folder("truncated", st.substr(0, st.size() - 1000), config), "lie outside");
    refused(folder("short", st.substr(0, 6), config), "truncated: no header length");
    // A header that lies: the first tensor's end moved 4 bytes on.
    const std::size_t offs = head.find("\"data_offsets\":[0,");
    REQUIRE(offs != std::string::npos);
    const std::size_t end_at = offs + 18, end_len = head.find(']', end_at) - end_at;
    std::string lying = head;
    lying.replace(end_at, end_len, std::to_string(std::stoull(head.substr(end_at, end_len)) + 4));
    lying.resize(header, ' ');
    refused(folder("lying", st.substr(0, 8) + lying + st.substr(8 + header), config), "772 bytes for a F32 tensor of 192 values");
    // And both ends moved on: the size fits, the ranges do not tile the data.
    lying = replaced(lying, "\"data_offsets\":[0,", "\"data_offsets\":[4,");
    lying.resize(header, ' ');
    refused(folder("shifted", st.substr(0, 8) + lying + st.substr(8 + header), config), "has a gap at byte 4");
    std::string odd = replaced(head, "\"F32\"", "\"I8\" ");
    refused(folder("dtype", st.substr(0, 8) + odd + st.substr(8 + header), config), "has dtype I8");
    refused(folder("no-key", st, replaced(config, "\"n_layer\"", "\"n_layers\"")), "the key 'n_layer' is missing");
    refused(folder("relu", st, replaced(config, "\"gelu_new\"", "\"relu\"")), "'activation_function' = \"relu\" is not supported");
    refused(folder("llama", st, replaced(config, "\"GPT2LMHeadModel\"", "\"BertModel\"")), "'architectures' = BertModel is not supported");
    refused(folder("wider", st, replaced(config, "\"n_embd\": 64", "\"n_embd\": 128")), "has shape [301, 64], expected [301, 128]");
    refused(folder("bad-json", st, config.substr(0, config.size() / 2)), "is not valid JSON");
    const std::string sharded = m.dir.file("gpt2-sharded");
    const std::string index = read_text_file(sharded + "/model.safetensors.index.json");
    write_file(sharded + "/model.safetensors.index.json", replaced(index, "\"model-00001-of-00007.safetensors\"", "\"../gpt2-fp32/model.safetensors\""));
    refused(sharded, "only files in the folder");
}

TEST_CASE("LlamaForCausalLMs from transformers: their logits and AdamW losses") {
    Made m("tests/core/hf_make_llama.py");
    auto backend = make_cpu_backend();
    const std::string gqa = "llama L2 C64 NH4 KV2 F96 T32 V301 (Vp 384) rope 500000 eps 1e-05 untied";
    const std::string llama3 = "llama L2 C64 NH4 KV1 F80 T64 V301 (Vp 384) rope 10000 (llama3 x8, 1/4, 32) eps 1e-06 tied";
    for (const auto& [name, described] : std::vector<std::pair<std::string, std::string>>{
             {"llama-gqa-fp32", gqa}, {"llama-gqa-bf16", gqa}, {"llama-gqa-sharded", gqa}, {"llama-gqa-v5", gqa},
             {"llama3-tied", llama3}, {"llama3-v5", llama3}}) {
        INFO(name);
        const HfModel hf = import_hf(m.dir.file(name));
        CHECK(hf.architecture == "LlamaForCausalLM");
        CHECK(describe(hf.config) == described);
        const auto model = make_transformer(hf.config, *backend);
        model->set_params(hf.params);
        const double worst = worst_relative_logit(*model, m, m.dir.file(name));
        std::printf("hf_import %s: worst logit error %.3g of the largest logit\n", name.c_str(), worst);
        CHECK(worst <= 1e-4);
    }
    // 5.x's rope_parameters read to the very same config as 4.x's rope_theta and rope_scaling.
    CHECK(import_hf(m.dir.file("llama3-v5")).config == import_hf(m.dir.file("llama3-tied")).config);
    CHECK(import_hf(m.dir.file("llama-gqa-v5")).config == import_hf(m.dir.file("llama-gqa-fp32")).config);
    {  // The rope scaling matters at this T: without it the logits miss by over 10x the tolerance.
        HfModel hf = import_hf(m.dir.file("llama3-tied"));
        hf.config.rope_scaling = RopeScaling{};
        const auto model = make_transformer(hf.config, *backend);
        model->set_params(hf.params);
        CHECK(worst_relative_logit(*model, m, m.dir.file("llama3-tied")) > 1e-3);
    }
    for (const std::string name : {"llama-gqa-fp32", "llama3-tied"}) {
        INFO(name);
        const HfModel hf = import_hf(m.dir.file(name));
        const auto model = make_transformer(hf.config, *backend);
        model->set_params(hf.params);
        const double worst = worst_relative_loss(*model, m, m.dir.file(name));
        std::printf("hf_import %s: 10 AdamW steps, worst loss difference %.3g relative to torch's\n", name.c_str(), worst);
        CHECK(worst <= 1e-4);
    }
}

TEST_CASE("a Llama through import, train --init/--init-hf/--resume and export") {
    Made m("tests/core/hf_make_llama.py");
    for (const std::string name : {"llama-gqa-fp32", "llama3-tied"}) {
        INFO(name);
        const std::string hf = m.dir.file(name), ckpt = m.dir.file(name + "-native/model.bin");
        fs::create_directories(m.dir.file(name + "-native"));
        REQUIRE(archipelago("import --hf " + hf + " --out " + ckpt) == 0);
        const HfModel want = import_hf(hf);
        CHECK(read_checkpoint_config(ckpt) == want.config);
        CHECK(read_checkpoint_params(ckpt, want.config) == want.params);
        CHECK(file_exists(m.dir.file(name + "-native/config.json")));
        // export: the very tensors transformers saved, bit for bit, and nothing else.
        const std::string out = m.dir.file(name + "-export");
        REQUIRE(archipelago("export --safetensors --checkpoint " + ckpt + " --out " + out) == 0);
        const SafetensorsFile theirs(hf + "/model.safetensors"), ours(out + "/model.safetensors");
        CHECK(ours.tensors().size() == theirs.tensors().size());
        for (const auto& [tensor, t] : theirs.tensors()) {
            INFO(tensor);
            REQUIRE(ours.has(tensor));
            CHECK(ours.read(tensor, t.shape) == theirs.read(tensor, t.shape));
        }
        CHECK(import_hf(out).config == want.config);
    }
    // train from the native checkpoint and from the folder, on shards whose tokens fit V = 301.
    std::vector<uint16_t> tokens(3000);
    for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>((i * 7) % 301);
    write_token_shard(m.dir.file("train.bin"), tokens);
    const std::string data = " --batch 2 --seq-len 16 --val-every 0 --train-data " + m.dir.file("train.bin") + " --steps ";
    CHECK(archipelago("train --init " + m.dir.file("llama3-tied-native/model.bin") + data + "2 --out " + m.dir.file("run-init")) == 0);
    CHECK(read_checkpoint_config(m.dir.file("run-init/model.bin")) == import_hf(m.dir.file("llama3-tied")).config);
    CHECK(archipelago("train --init-hf " + m.dir.file("llama-gqa-fp32") + data + "2 --out " + m.dir.file("run-hf")) == 0);
    CHECK(read_checkpoint_config(m.dir.file("run-hf/model.bin")) == import_hf(m.dir.file("llama-gqa-fp32")).config);
    // and resume it: the run state beside the native checkpoint works as beside llm.c's.
    CHECK(archipelago("train --init-hf " + m.dir.file("llama-gqa-fp32") + data + "4 --out " + m.dir.file("run-hf") + " --resume") == 0);
    CHECK(read_checkpoint_config(m.dir.file("run-hf/model.bin")) == import_hf(m.dir.file("llama-gqa-fp32")).config);
}

TEST_CASE("bad Llama folders are refused naming the key or tensor") {
    Made m("tests/core/hf_make_llama.py");
    const std::string gqa = m.dir.file("llama-gqa-fp32"), tied = m.dir.file("llama3-tied");
    const std::string st = read_file_bytes(gqa + "/model.safetensors"), config = read_text_file(gqa + "/config.json");
    const std::string config3 = read_text_file(tied + "/config.json");
    auto folder = [&](const std::string& name, const std::string& safetensors, const std::string& json) {
        return write_folder(m, name, safetensors, json);
    };
    // The tensors of the good file, less or more of them.
    const SafetensorsFile good(gqa + "/model.safetensors");
    auto tensors_with = [&](const std::string& drop, const std::string& extra) {
        std::vector<SafeTensorOut> out;
        for (const auto& [name, t] : good.tensors()) {
            if (name == drop) continue;
            out.push_back({name, std::vector<int>(t.shape.begin(), t.shape.end()), good.read(name, t.shape)});
        }
        if (!extra.empty()) out.push_back({extra, {64}, std::vector<float>(64, 0.5f)});
        const std::string path = m.dir.file("tensors.safetensors");
        write_safetensors(path, out);
        return read_file_bytes(path);
    };
    refused(folder("bias", st, replaced(config, "\"attention_bias\": false", "\"attention_bias\": true")),
            "'attention_bias' = true is not supported");
    refused(folder("yarn", read_file_bytes(tied + "/model.safetensors"), replaced(config3, "\"llama3\"", "\"yarn\"")),
            "'rope_scaling.rope_type' = \"yarn\" is not supported");
    refused(folder("linear", st, replaced(config, "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}")),
            "'rope_scaling.type' = \"linear\" is not supported");
    const std::string v5 = read_text_file(m.dir.file("llama3-v5/config.json"));
    refused(folder("v5-dynamic", read_file_bytes(tied + "/model.safetensors"), replaced(v5, "\"llama3\"", "\"dynamic\"")),
            "'rope_parameters.rope_type' = \"dynamic\" is not supported");
    refused(folder("no-ffn", st, replaced(config, "\"intermediate_size\"", "\"ffn_size\"")), "the key 'intermediate_size' is missing");
    refused(folder("head-dim", st, replaced(config, "\"hidden_size\": 64,", "\"hidden_size\": 64, \"head_dim\": 32,")),
            "'head_dim' = 32 is not supported");
    refused(folder("gelu", st, replaced(config, "\"silu\"", "\"gelu\"")), "'hidden_act' = \"gelu\" is not supported");
    refused(folder("no-k", tensors_with("model.layers.1.self_attn.k_proj.weight", ""), config),
            "the tensor 'model.layers.1.self_attn.k_proj.weight' is missing");
    refused(folder("kv4", st, replaced(config, "\"num_key_value_heads\": 2", "\"num_key_value_heads\": 4")),
            "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [32, 64], expected [64, 64]");
    refused(folder("q-bias", tensors_with("", "model.layers.0.self_attn.q_proj.bias"), config),
            "the tensor 'model.layers.0.self_attn.q_proj.bias' is not part of the model");
    refused(folder("tied-differs", st, replaced(config, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true")),
            "lm_head.weight differs from model.embed_tokens.weight");
}
