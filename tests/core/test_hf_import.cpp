// tests/core/test_hf_import.cpp: Hugging Face folders made by transformers (tests/core/hf_make_models.py,
// run from .venv) imported: a random GPT2LMHeadModel saved in fp32, in shards, in fp16 and in bf16
// gives transformers' logits to 1e-4 relative, and 10 AdamW steps give torch's losses to 1e-4. Then
// the bad inputs: a truncated safetensors file, a header whose offsets lie, an unknown dtype, a
// config.json missing a key or asking for what is not built, a shard outside the folder; each a
// clear error, and `archipelago import` writes nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/gpt2.h"
#include "core/hf_import.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/core/temp_dir.h"

using namespace arch;
namespace fs = std::filesystem;

namespace {

struct Made {
    TempDir dir;
    int B = 0, T = 0;
    std::vector<int> tokens;  // B x (T + 1)
    Made() {
        const std::string python = ".venv/bin/python";
        INFO("needs " << python << " with transformers: run scripts/install_deps.sh");
        REQUIRE(file_exists(python));
        REQUIRE(std::system((python + " tests/core/hf_make_models.py " + dir.path.string()).c_str()) == 0);
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

}  // namespace

TEST_CASE("a GPT2LMHeadModel from transformers, in fp32, shards, fp16 and bf16: its logits, and torch's AdamW losses") {
    Made m;
    auto backend = make_cpu_backend();
    std::vector<int> in, out;
    m.batch(in, out);
    for (const std::string name : {"gpt2-fp32", "gpt2-sharded", "gpt2-fp16", "gpt2-bf16"}) {
        INFO(name);
        const HfModel hf = import_hf(m.dir.file(name));
        CHECK(hf.architecture == "GPT2LMHeadModel");
        CHECK(describe(hf.config) == "L2 C64 NH4 T32 V301 (Vp 384)");
        GPT2 model(hf.config, *backend);
        model.set_params(hf.params);
        model.forward(in.data(), nullptr, m.B, m.T);
        const std::string raw = read_file_bytes(m.dir.file(name + "/logits.bin"));
        const int V = hf.config.vocab_size;
        REQUIRE(raw.size() == static_cast<std::size_t>(m.B) * m.T * V * 4);
        std::vector<float> want(raw.size() / 4);
        std::memcpy(want.data(), raw.data(), raw.size());
        float worst = 0, largest = 0;
        for (int b = 0; b < m.B; ++b)
            for (int t = 0; t < m.T; ++t) {
                const std::vector<float> row = model.logits_at(b, t);
                for (int v = 0; v < V; ++v) {
                    const float w = want[(static_cast<std::size_t>(b) * m.T + t) * V + v];
                    worst = std::max(worst, std::abs(row[v] - w));
                    largest = std::max(largest, std::abs(w));
                }
            }
        INFO("worst " << worst << " of largest " << largest);
        CHECK(worst <= 1e-4f * largest);
    }
    // 10 AdamW steps, the engine's own optimizer at torch's settings, against torch's losses.
    const HfModel hf = import_hf(m.dir.file("gpt2-fp32"));
    GPT2 model(hf.config, *backend);
    model.set_params(hf.params);
    std::vector<double> theirs;
    std::istringstream lines(read_text_file(m.dir.file("gpt2-fp32/adamw_losses.txt")));
    for (double x; lines >> x;) theirs.push_back(x);
    REQUIRE(theirs.size() == 10);
    AdamWConfig adamw;  // betas 0.9/0.95, eps 1e-8, weight decay 0.1 on 2-D tensors, clip 1.0
    for (int step = 0; step < 10; ++step) {
        INFO("step " << step + 1);
        model.zero_grad();
        const float loss = model.forward(in.data(), out.data(), m.B, m.T);
        model.backward();
        model.adamw_step(1e-3f, adamw);
        CHECK(std::abs(loss - theirs[step]) <= 1e-4 * theirs[step]);
    }
}

TEST_CASE("bad Hugging Face folders are refused with the file and key named; import writes nothing") {
    Made m;
    const std::string good = m.dir.file("gpt2-fp32");
    const std::string st = read_file_bytes(good + "/model.safetensors"), config = read_text_file(good + "/config.json");
    auto folder = [&](const std::string& name, const std::string& safetensors, const std::string& json) {
        const std::string d = m.dir.file(name);
        fs::create_directories(d);
        write_file(d + "/model.safetensors", safetensors);
        write_file(d + "/config.json", json);
        return d;
    };
    auto refused = [&](const std::string& d, const std::string& message) {
        INFO(d);
        CHECK_THROWS_WITH(import_hf(d), Catch::Contains(message));
        const char* bin = std::getenv("ARCH_BIN_DIR");
        REQUIRE(bin);
        const std::string out = d + "/out.bin";
        CHECK(std::system((std::string(bin) + "/archipelago import --hf " + d + " --out " + out + " > /dev/null 2>&1").c_str()) != 0);
        CHECK_FALSE(file_exists(out));
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
