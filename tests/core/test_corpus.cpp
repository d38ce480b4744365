// tests/core/test_corpus.cpp: prepare_corpus on small temporary texts (plain and zstd): the shards
// decode back to the input with <|endoftext|> before each document, val is the tail (or, spread,
// every k-th chunk), reruns are clean; bad inputs are refused; the bundled corpus is prepared once
// and then reused; the benchmark corpus names the Debian packages it lacks.
#include "core/corpus.h"

#include <zstd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "core/data_loader.h"
#include "core/data_manifest.h"
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

TEST_CASE("documents with blank lines between paragraphs encode as if whole") {
    // The reader cuts text after a newline; a cut after "\n\n" would make the two newlines one token.
    TempDir dir;
    std::string paragraphs;
    for (int i = 0; i < 2000; i++) paragraphs += "\n\n x";
    const arch::Tokenizer trained = arch::Tokenizer::train(paragraphs + document(5, 2000), 300);
    REQUIRE(trained.encode("\n\n").size() == 1);  // else a wrong cut would give the same tokens
    trained.save(dir.file("tok.bin"));

    std::string text;
    for (int p = 0; p < 200; p++) text += document(40 + p, 20) + (p % 2 ? "\n\n Next" : p % 3 ? "\n\nNext" : "\nNext");
    text += "\n\nThe end.";  // the last place to cut: after "\n\n", which the reader must not take
    write_file(dir.file("a.txt"), text);
    const std::string out = dir.file("out");
    const arch::PreparedCorpus c = arch::prepare_corpus({dir.file("a.txt")}, out, 0, 0.1, dir.file("tok.bin"));
    std::vector<int> expected = {trained.eot_token()};
    for (int id : trained.encode(text)) expected.push_back(id);
    std::vector<int> got = shard_ids(out, "train"), val = shard_ids(out, "val");
    got.insert(got.end(), val.begin(), val.end());
    CHECK(got == expected);
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

    // The same bytes as every earlier version wrote (uint16 shards, tail split), pinned by BLAKE2b-256.
    CHECK(arch::hash_file(out + "/tokenizer.bin") == "9723e3fdc375783f13bdad4ab1e45ba4bdd466dd886b9dcbfefa05e3a2b5602e");
    CHECK(arch::hash_file(out + "/train_000000.bin") == "4c89b62f890a335728a5cdf9f39b71e2fe218256b172f06ff7940b1bd9d9f051");
    CHECK(arch::hash_file(out + "/val_000000.bin") == "11db2364000c86956aeb1a90140d4245ac044e41cd40cf315485b81f0081ac98");

    arch::DataLoader train(c.train_pattern, 4, 64, arch::DataOrder::sequential, 0, 4096);
    arch::DataLoader val(c.val_pattern, 4, 64, arch::DataOrder::sequential, 0, 4096);
    CHECK(train.total_tokens() > 1'000'000);
    CHECK(val.total_tokens() * 50 >= train.total_tokens());  // 2% of the tokens

    fs::remove(out + "/DONE");  // as if interrupted: redone
    arch::ensure_bundled_corpus("data/kjv.txt.zst", out);
    CHECK(fs::exists(out + "/DONE"));
    CHECK_THROWS_WITH(arch::ensure_bundled_corpus(dir.file("no_repo/kjv.txt.zst"), out), Contains("kjv.txt.zst"));
}

TEST_CASE("a spread val split holds out every k-th chunk, from all over the stream") {
    TempDir dir;
    std::vector<std::string> inputs, texts;
    for (int d = 0; d < 6; d++) {
        texts.push_back(document(10 + d, 2500));
        inputs.push_back(dir.file("doc" + std::to_string(d) + ".txt"));
        write_file(inputs.back(), texts.back());
    }
    const std::string out = dir.file("out");
    constexpr uint64_t kChunk = 128, kStride = 10;
    const arch::PreparedCorpus c = arch::prepare_corpus(inputs, out, 300, arch::ValSplit{0.1, kChunk}, "");
    CHECK_THAT(read_file_bytes(out + "/DONE"), Contains("val_chunk_tokens 128"));

    // The whole stream, as a tail split would have cut it.
    const arch::Tokenizer tok = arch::Tokenizer::load(c.tokenizer_path);
    std::vector<int> stream;
    for (const std::string& t : texts) {
        stream.push_back(tok.eot_token());
        for (int id : tok.encode(t)) stream.push_back(id);
    }
    const std::vector<int> train = shard_ids(out, "train"), val = shard_ids(out, "val");
    const size_t n = stream.size();
    REQUIRE(n > 40 * kChunk);
    CHECK(train.size() + val.size() == n);

    // Chunk g of the stream is the next piece of val when g % k == k-1, of train otherwise: so every
    // token is in exactly one split, in stream order, and putting them back gives the stream.
    std::vector<int> rebuilt;
    std::vector<size_t> val_starts;
    size_t t = 0, v = 0;
    for (size_t g = 0, off = 0; off < n; g++, off += kChunk) {
        const size_t len = std::min<size_t>(kChunk, n - off);
        const bool is_val = g % kStride == kStride - 1;
        const std::vector<int>& from = is_val ? val : train;
        size_t& at = is_val ? v : t;
        REQUIRE(at + len <= from.size());
        rebuilt.insert(rebuilt.end(), from.begin() + static_cast<std::ptrdiff_t>(at),
                       from.begin() + static_cast<std::ptrdiff_t>(at + len));
        at += len;
        if (is_val) val_starts.push_back(off);
    }
    CHECK(t == train.size());
    CHECK(v == val.size());
    CHECK(rebuilt == stream);

    // About a tenth of the tokens, and some from every tenth of the stream.
    CHECK(val.size() >= n / kStride - kChunk);
    CHECK(val.size() <= n / kStride + kChunk);
    for (size_t tenth = 0; tenth < 10; tenth++) {
        const size_t lo = tenth * n / 10, hi = (tenth + 1) * n / 10;
        CHECK(std::any_of(val_starts.begin(), val_starts.end(), [&](size_t s) { return s + kChunk > lo && s < hi; }));
    }

    // The tail split of the same inputs is a different preparation.
    arch::prepare_corpus(inputs, out, 300, 0.1, "");
    const std::vector<int> tail = shard_ids(out, "val");
    CHECK(std::equal(tail.begin(), tail.end(), stream.end() - static_cast<std::ptrdiff_t>(tail.size())));
    CHECK(read_file_bytes(out + "/DONE").find("val_chunk_tokens") == std::string::npos);

    CHECK_THROWS_WITH(arch::prepare_corpus(inputs, out, 300, arch::ValSplit{0.0, kChunk}, ""), Contains("spread"));
    CHECK_THROWS_WITH(arch::prepare_corpus(inputs, out, 300, arch::ValSplit{0.001, kChunk}, ""),
                      Contains("takes one chunk in 1000") && Contains("chunks of 128 tokens"));
}

TEST_CASE("the benchmark corpus names the Debian packages it lacks") {
    // Tests run from the repository root, where data/make_bench_corpus.py lives.
    REQUIRE(fs::exists("data/make_bench_corpus.py"));
    TempDir dir;
    fs::create_directories(dir.file("empty-root"));
    const std::string out = dir.file("bench");
    CHECK_THROWS_WITH(arch::ensure_bench_corpus("data/make_bench_corpus.py", out, dir.file("empty-root")),
                      Contains("not installed") && Contains("sword-comm-tdavid") && Contains("jargon-text") &&
                          Contains("libsword-utils") && Contains("apt-get install"));
    CHECK_FALSE(fs::exists(out + "/DONE"));
    CHECK_THROWS_WITH(arch::ensure_bench_corpus(dir.file("none.py"), out), Contains("none.py"));
}

TEST_CASE("the benchmark corpus is over 5M train tokens with val spread over it") {
    // Prepared once into the tests' data directory (build-test-data/corpus/bench), then reused.
    arch::PreparedCorpus c;
    try {
        c = arch::ensure_bench_corpus();
    } catch (const arch::Error& e) {
        if (std::string(e.what()).find("not installed") == std::string::npos) throw;
        WARN("skipped: " << e.what());
        return;
    }
    CHECK(arch::Tokenizer::load(c.tokenizer_path).vocab_size() == 4096);
    arch::DataLoader train(c.train_pattern, 8, 64, arch::DataOrder::sequential, 0, 4096);
    arch::DataLoader val(c.val_pattern, 8, 64, arch::DataOrder::sequential, 0, 4096);
    CHECK(train.total_tokens() > 5'000'000);          // 4 islands x 40 rounds x H=50 x 8 x 64 read once
    CHECK(val.total_tokens() >= 32 * (8 * 64 + 1));   // bench_convergence's 32 val batches
    CHECK(val.total_tokens() * 70 > train.total_tokens());  // every 64th chunk: about 1.6%
    const auto stamp = fs::last_write_time(fs::path(c.tokenizer_path));
    arch::ensure_bench_corpus();
    CHECK(fs::last_write_time(fs::path(c.tokenizer_path)) == stamp);
}
