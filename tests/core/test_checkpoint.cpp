// tests/core/test_checkpoint.cpp: llm.c checkpoints round-trip in llm.c order; truncated, corrupt,
// oversized or mismatched files are refused with a message naming the problem, and a failed write
// never replaces a good file.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/rng.h"
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
