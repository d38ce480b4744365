// tests/core/test_corpus.cpp: prepare_corpus on small temporary texts (plain and zstd): the shards
// decode back to the input with <|endoftext|> before each document, val is the tail, reruns are
// clean; bad inputs are refused; the bundled corpus is prepared once and then reused.
#include "core/corpus.h"

#include <zstd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "core/data_loader.h"
#include "core/error.h"
#include "core/token_shard.h"
#include "core/tokenizer.h"
#include "tests/core/temp_dir.h"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string document(uint64_t seed, int words) {
    const char* vocab[] = {"In", "the", "beginning", "was", "the", "word,", "and", "light", "9", "said:",
                           "\n", "caf\xc3\xa9", "don't", "  ", "\xff"};
    std::string s;
    for (int i = 0; i < words; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        s += vocab[(seed >> 33) % (sizeof(vocab) / sizeof(vocab[0]))];
        s += " ";
    }
    return s;
}

std::string zstd_compress(const std::string& text) {
    std::string out(ZSTD_compressBound(text.size()), '\0');
    const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3);
    REQUIRE_FALSE(ZSTD_isError(n));
    out.resize(n);
    return out;
}

std::vector<int> shard_ids(const std::string& pattern_dir, const char* prefix) {
    std::vector<int> ids;
    for (int i = 0;; i++) {
        char name[32];
        std::snprintf(name, sizeof(name), "%s_%06d.bin", prefix, i);
        const std::string path = (fs::path(pattern_dir) / name).string();
        if (!fs::exists(path)) break;
        for (uint16_t t : arch::read_token_shard(path)) ids.push_back(t);
    }
    return ids;
}

}  // namespace

TEST_CASE("prepared shards decode to the inputs, each document after <|endoftext|>") {
    TempDir dir;
    const std::string a = document(1, 12000), b = document(2, 3000);
    write_file(dir.file("a.txt"), a);
    write_file(dir.file("b.txt.zst"), zstd_compress(b));
    const std::string out = dir.file("out");
    fs::create_directories(out);
    arch::write_token_shard(out + "/train_000009.bin", std::vector<uint16_t>{1, 2, 3});  // stale

    const arch::PreparedCorpus c = arch::prepare_corpus({dir.file("a.txt"), dir.file("b.txt.zst")}, out, 300, 0.1, "");
    CHECK(c.train_pattern == out + "/train_*.bin");
    CHECK(c.val_pattern == out + "/val_*.bin");
    CHECK(c.tokenizer_path == out + "/tokenizer.bin");
    CHECK(fs::exists(out + "/DONE"));
    CHECK_FALSE(fs::exists(out + "/train_000009.bin"));

    const arch::Tokenizer tok = arch::Tokenizer::load(c.tokenizer_path);
    CHECK(tok.vocab_size() == 300);
    const std::vector<int> train = shard_ids(out, "train"), val = shard_ids(out, "val");
    const size_t n = train.size() + val.size();
    CHECK(val.size() == std::min<size_t>(std::max<size_t>(std::ceil(0.1 * n), arch::kMinValTokens), n / 2));
    CHECK(train[0] == tok.eot_token());
    std::vector<int> all = train;
    all.insert(all.end(), val.begin(), val.end());
    CHECK(tok.decode(all) == "<|endoftext|>" + a + "<|endoftext|>" + b);

    arch::DataLoader loader(c.train_pattern, 2, 32, arch::DataOrder::sequential, 0, tok.vocab_size());
    CHECK(loader.total_tokens() == train.size());

    SECTION("a given tokenizer is reused and gives the same tokens") {
        const std::string saved = dir.file("tok.bin");
        fs::copy_file(c.tokenizer_path, saved);
        const std::string out2 = dir.file("out2");
        const arch::PreparedCorpus c2 = arch::prepare_corpus({dir.file("a.txt"), dir.file("b.txt.zst")}, out2, 999, 0.1, saved);
        CHECK(c2.tokenizer_path == saved);
        CHECK_FALSE(fs::exists(out2 + "/tokenizer.bin"));
        CHECK(shard_ids(out2, "train") == train);
        CHECK(shard_ids(out2, "val") == val);
    }
}

TEST_CASE("prepare refuses bad inputs") {
    TempDir dir;
    const std::string out = dir.file("out");
    CHECK_THROWS_WITH(arch::prepare_corpus({}, out, 300, 0.1, ""), Contains("no input files"));
    CHECK_THROWS_WITH(arch::prepare_corpus({dir.file("none.txt")}, out, 300, 0.1, ""),
                      Contains("none.txt") && Contains("does not exist"));
    write_file(dir.file("a.txt"), document(3, 2000));
    CHECK_THROWS_WITH(arch::prepare_corpus({dir.file("a.txt")}, out, 300, 0.9, ""), Contains("val_fraction"));
    CHECK_THROWS_WITH(arch::prepare_corpus({dir.file("a.txt")}, out, 300, 0.1, dir.file("no_tok.bin")),
                      Contains("no_tok.bin"));
    const std::string z = zstd_compress(document(4, 2000));
    write_file(dir.file("cut.txt.zst"), z.substr(0, z.size() / 2));
    CHECK_THROWS_WITH(arch::prepare_corpus({dir.file("cut.txt.zst")}, out, 300, 0.1, ""),
                      Contains("cut.txt.zst") && Contains("truncated"));
    write_file(dir.file("junk.txt.zst"), "this is not zstd");
    CHECK_THROWS_WITH(arch::prepare_corpus({dir.file("junk.txt.zst")}, out, 300, 0.1, ""),
                      Contains("junk.txt.zst") && Contains("zstd"));
    CHECK_FALSE(fs::exists(out + "/DONE"));
}

TEST_CASE("the bundled corpus is prepared once, then reused") {
    // Tests run from the repository root (tests/CMakeLists.txt), where data/kjv.txt.zst lives.
    REQUIRE(fs::exists("data/kjv.txt.zst"));
    TempDir dir;
    const std::string out = dir.file("kjv");
    const arch::PreparedCorpus c = arch::ensure_bundled_corpus("data/kjv.txt.zst", out);
    CHECK(arch::Tokenizer::load(c.tokenizer_path).vocab_size() == 4096);
    const auto stamp = fs::last_write_time(out + "/train_000000.bin");
    const arch::PreparedCorpus again = arch::ensure_bundled_corpus("data/kjv.txt.zst", out);
    CHECK(again.train_pattern == c.train_pattern);
    CHECK(fs::last_write_time(out + "/train_000000.bin") == stamp);

    // The text was streamed in zstd-sized chunks; the tokens equal those of encoding it whole.
    const std::string z = read_file_bytes("data/kjv.txt.zst");
    std::string text(64 << 20, '\0');  // the frame was streamed, so it does not record its size
    const size_t text_bytes = ZSTD_decompress(text.data(), text.size(), z.data(), z.size());
    REQUIRE_FALSE(ZSTD_isError(text_bytes));
    text.resize(text_bytes);
    const arch::Tokenizer tok = arch::Tokenizer::load(c.tokenizer_path);
    std::vector<int> expected = {tok.eot_token()};
    for (int id : tok.encode(text)) expected.push_back(id);
    std::vector<int> got = shard_ids(out, "train"), val_ids = shard_ids(out, "val");
    got.insert(got.end(), val_ids.begin(), val_ids.end());
    CHECK(got == expected);

    arch::DataLoader train(c.train_pattern, 4, 64, arch::DataOrder::sequential, 0, 4096);
    arch::DataLoader val(c.val_pattern, 4, 64, arch::DataOrder::sequential, 0, 4096);
    CHECK(train.total_tokens() > 1'000'000);
    CHECK(val.total_tokens() * 50 >= train.total_tokens());  // 2% of the tokens

    fs::remove(out + "/DONE");  // as if interrupted: redone
    arch::ensure_bundled_corpus("data/kjv.txt.zst", out);
    CHECK(fs::exists(out + "/DONE"));
    CHECK_THROWS_WITH(arch::ensure_bundled_corpus(dir.file("no_repo/kjv.txt.zst"), out), Contains("kjv.txt.zst"));
}
