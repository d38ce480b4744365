// tests/core/test_tokenizer.cpp: BPE training, exact round trips on any bytes, the file format and
// its validation, and decoding llm.c's gpt2_tokenizer.bin (a tiny one written here).
#include "core/tokenizer.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "tests/core/temp_dir.h"

using arch::Tokenizer;
using Catch::Matchers::Contains;

namespace {

// A few kB of English-like text with repeats, punctuation, digits, contractions and newlines.
std::string sample_text() {
    const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "it's",
                           "they'll", "we've", "2024", "3.14", "hello,", "world!", "(again)", "\n", "  "};
    std::string s;
    uint64_t x = 12345;
    for (int i = 0; i < 3000; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        s += words[(x >> 33) % (sizeof(words) / sizeof(words[0]))];
        s += (x >> 20) % 7 == 0 ? "\n" : " ";
    }
    return s;
}

const Tokenizer& trained() {
    static const Tokenizer tok = Tokenizer::train(sample_text(), 300);
    return tok;
}

std::string u32s(std::initializer_list<uint32_t> values) {
    std::string out;
    for (uint32_t v : values) out.append(reinterpret_cast<const char*>(&v), 4);
    return out;
}

std::string llmc_tokenizer(uint32_t version, const std::vector<std::string>& tokens, uint32_t eot) {
    std::string header(256 * 4, '\0');
    const std::string first = u32s({20240328, version, static_cast<uint32_t>(tokens.size()), eot});
    header.replace(0, first.size(), first);
    for (const std::string& t : tokens) header += static_cast<char>(t.size()) + t;
    return header;
}

}  // namespace

TEST_CASE("training gives the requested vocabulary and merges that compress") {
    const Tokenizer& tok = trained();
    CHECK(tok.vocab_size() == 300);
    CHECK(tok.eot_token() == 299);
    CHECK(tok.merges().size() == 300 - 257);
    CHECK(tok.decode_token(tok.eot_token()) == "<|endoftext|>");
    CHECK(tok.can_encode());
    const std::string text = sample_text();
    const std::vector<int> ids = tok.encode(text);
    CHECK(ids.size() * 5 < text.size() * 3);  // 43 merges already save 40%
    for (int id : ids) CHECK(id < tok.eot_token());
}

TEST_CASE("training is deterministic") {
    const Tokenizer again = Tokenizer::train(sample_text(), 300);
    CHECK(again.merges() == trained().merges());
}

TEST_CASE("encode then decode returns any bytes exactly") {
    const Tokenizer& tok = trained();
    std::string all_bytes;
    for (int b = 0; b < 256; b++) all_bytes += static_cast<char>(b);
    std::string random_bytes;
    uint64_t x = 99;
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        random_bytes += static_cast<char>(x & 0xff);
    }
    const std::string cases[] = {"",
                                 "a",
                                 " ",
                                 "the quick brown fox",
                                 "\xff\xfe\x80 invalid \xc3 utf-8 \xed\xa0\x80",
                                 "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac",
                                 "<|endoftext|> is plain text here",
                                 "it's   three  spaces\n\n\ttab'll 're 'd'",
                                 std::string(2000, ' ') + "x",
                                 std::string(1500, 'a'),
                                 all_bytes,
                                 random_bytes,
                                 sample_text()};
    for (const std::string& text : cases) {
        const std::vector<int> ids = tok.encode(text);
        CHECK(tok.decode(ids) == text);
        if (text.empty()) CHECK(ids.empty());
    }
}

TEST_CASE("encoding chunks cut at a safe prefix equals encoding the whole") {
    const Tokenizer& tok = trained();
    const std::string text = sample_text();
    const size_t cut = arch::pretoken_safe_prefix(text.substr(0, text.size() / 2));
    REQUIRE(cut > 0);
    std::vector<int> parts = tok.encode(std::string_view(text).substr(0, cut));
    const std::vector<int> rest = tok.encode(std::string_view(text).substr(cut));
    parts.insert(parts.end(), rest.begin(), rest.end());
    CHECK(parts == tok.encode(text));
    CHECK(arch::pretoken_safe_prefix("no newline at all") == 0);
    CHECK(arch::pretoken_safe_prefix("a\nb") == 2);
    CHECK(arch::pretoken_safe_prefix("a\n b") == 0);
}

TEST_CASE("bad training requests are refused") {
    CHECK_THROWS_WITH(Tokenizer::train("abc", 256), Contains("between 257"));
    CHECK_THROWS_WITH(Tokenizer::train("abc", 70000), Contains("65536"));
    CHECK_THROWS_WITH(Tokenizer::train("ab ab", 300), Contains("allows only"));
    CHECK(Tokenizer::train("", 257).vocab_size() == 257);
}

TEST_CASE("decode rejects ids outside the vocabulary") {
    const std::vector<int> bad = {1, 300};
    CHECK_THROWS_WITH(trained().decode(bad), Contains("300") && Contains("outside"));
    CHECK_THROWS_AS(trained().decode_token(-1), arch::Error);
}

TEST_CASE("save then load gives the same tokenizer") {
    TempDir dir;
    const std::string path = dir.file("tok.bin");
    trained().save(path);
    const Tokenizer loaded = Tokenizer::load(path);
    CHECK(loaded.merges() == trained().merges());
    CHECK(loaded.vocab_size() == 300);
    CHECK(loaded.eot_token() == 299);
    CHECK(loaded.encode(sample_text()) == trained().encode(sample_text()));
    CHECK(read_file_bytes(path).size() == 24 + 8 * trained().merges().size());
}

TEST_CASE("corrupt tokenizer files are rejected with a reason") {
    TempDir dir;
    const std::string good_path = dir.file("good.bin"), path = dir.file("bad.bin");
    trained().save(good_path);
    const std::string good = read_file_bytes(good_path);

    CHECK_THROWS_WITH(Tokenizer::load(dir.file("missing.bin")), Contains("missing.bin"));
    write_file(path, good.substr(0, good.size() - 1));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("bad.bin") && Contains("truncated"));
    write_file(path, good.substr(0, 10));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("truncated"));
    write_file(path, good + "x");
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("trailing"));
    std::string bad = good;
    bad[0] = 'X';
    write_file(path, bad);
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("magic"));
    bad = good;
    bad.replace(8, 4, u32s({2}));
    write_file(path, bad);
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("version 2"));
    bad = good;
    bad.replace(16, 4, u32s({5}));  // eot
    write_file(path, bad);
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("corrupt"));
    bad = good;
    bad.replace(24, 4, u32s({256}));  // merge 0 may only use bytes 0..255
    write_file(path, bad);
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("merge 0") && Contains("only ids below 256"));
    bad = good;
    bad.replace(32, 8, good.substr(24, 8));  // merge 1 repeats merge 0
    write_file(path, bad);
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("repeats"));
}

TEST_CASE("llm.c gpt2_tokenizer.bin decodes but cannot encode") {
    TempDir dir;
    const std::string path = dir.file("gpt2_tokenizer.bin");
    write_file(path, llmc_tokenizer(2, {"He", "llo", " world", "", "<|endoftext|>"}, 4));
    const Tokenizer tok = Tokenizer::load(path);
    CHECK(tok.vocab_size() == 5);
    CHECK(tok.eot_token() == 4);
    CHECK_FALSE(tok.can_encode());
    const std::vector<int> ids = {0, 1, 2, 3, 4};
    CHECK(tok.decode(ids) == "Hello world<|endoftext|>");
    CHECK_THROWS_WITH(tok.encode("Hello"), Contains("only decode"));
    CHECK_THROWS_AS(tok.save(dir.file("out.bin")), arch::Error);

    write_file(path, llmc_tokenizer(1, {"a", "b"}, 0));
    CHECK(Tokenizer::load(path).eot_token() == 1);  // version 1: no eot field

    const std::string good = llmc_tokenizer(2, {"ab", "c"}, 1);
    write_file(path, good.substr(0, good.size() - 1));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("truncated") && Contains("token 1"));
    write_file(path, good + "zz");
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("trailing"));
    write_file(path, llmc_tokenizer(3, {"a"}, 0));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("version 3"));
    write_file(path, llmc_tokenizer(2, {"a"}, 1));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("eot"));
    write_file(path, good.substr(0, 100));
    CHECK_THROWS_WITH(Tokenizer::load(path), Contains("truncated"));
}
