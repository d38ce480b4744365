// tests/core/test_hf_tokenizer.cpp: HfTokenizer against the `tokenizers` library itself (in .venv,
// which scripts/install_deps.sh creates). tests/core/hf_tokenizers.py trains a GPT-2-style and a
// Llama-3-style byte-level BPE on the bundled Bible and writes the ids it gives the whole Bible and
// tests/fixtures/tokenizer_adversarial.txt; ours must be identical, with and without the template's
// special tokens, and decode back to the text; so must `archipelago prepare --tokenizer` with it.
// Unsupported or broken files are refused by key.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_tokenizer.h"
#include "core/token_shard.h"
#include "core/tokenizer.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {

std::vector<int> read_ids(const std::string& path) {
    const std::string bytes = read_file_bytes(path);
    std::vector<int> ids(bytes.size() / 4);
    std::memcpy(ids.data(), bytes.data(), ids.size() * 4);
    return ids;
}

// The index of the first difference, or -1 when equal.
long first_difference(const std::vector<int>& a, const std::vector<int>& b) {
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        if (a[i] != b[i]) return static_cast<long>(i);
    return a.size() == b.size() ? -1 : static_cast<long>(std::min(a.size(), b.size()));
}

}  // namespace

TEST_CASE("tokenizer.json of GPT-2 and Llama 3 style: the ids of `tokenizers` on the whole corpus and an adversarial text") {
    TempDir dir;
    const std::string python = ".venv/bin/python";
    INFO("needs " << python << " with tokenizers: run scripts/install_deps.sh");
    REQUIRE(file_exists(python));
    const std::string corpus = dir.file("kjv.txt"), adversarial = "tests/fixtures/tokenizer_adversarial.txt";
    REQUIRE(std::system(("zstd -dqc data/kjv.txt.zst > " + corpus).c_str()) == 0);
    REQUIRE(std::system((python + " tests/core/hf_tokenizers.py " + dir.path.string() + " " + corpus + " " + adversarial).c_str()) == 0);
    const std::vector<std::string> texts = {read_file_bytes(corpus), read_file_bytes(adversarial)};
    REQUIRE(texts[0].size() > 4'000'000);
    for (const std::string kind : {"gpt2", "llama3"}) {
        const HfTokenizer tok = HfTokenizer::load(dir.file(kind + "/tokenizer.json"));
        CHECK(tok.vocab_size() == 3000);
        for (std::size_t i = 0; i < texts.size(); ++i) {
            INFO(kind << ", text " << i);
            const std::vector<int> ours = tok.encode(texts[i]);
            const std::vector<int> theirs = read_ids(dir.file(kind + "/" + std::to_string(i) + ".ids"));
            const long at = first_difference(ours, theirs);
            INFO("first difference at token " << at << " of " << theirs.size());
            CHECK(at == -1);
            CHECK(first_difference(tok.encode(texts[i], true), read_ids(dir.file(kind + "/" + std::to_string(i) + ".special.ids"))) == -1);
            CHECK(tok.decode(ours) == texts[i]);
        }
        CHECK(tok.eot_token() == (kind == "gpt2" ? 0 : 1));  // <|endoftext|>, <|end_of_text|>
        const Tokenizer same = Tokenizer::load(dir.file(kind + "/tokenizer.json"));  // what prepare, sample and train load
        CHECK(same.is_hugging_face());
        CHECK(same.encode(texts[1]) == tok.encode(texts[1]));
        CHECK(same.decode(tok.encode(texts[1])) == texts[1]);
        CHECK(same.eot_token() == tok.eot_token());
        CHECK_THROWS_WITH(same.save(dir.file("copy.bin")), Catch::Contains("used from where it lies"));
    }
    // `archipelago prepare --tokenizer tokenizer.json`: the shards hold the document's separator (the
    // template's <|begin_of_text|>, as llm.c prepares Llama 3 data), then exactly the ids `tokenizers`
    // gives the whole corpus (prepare encodes it in pieces, on every core). The corpus is one document,
    // so val is the stream's tail.
    const char* bin = std::getenv("ARCH_BIN_DIR");
    REQUIRE(bin);
    const std::string prepare = std::string(bin) + "/archipelago prepare --input " + corpus + " --out " + dir.file("prep") +
                                 " --tokenizer " + dir.file("llama3/tokenizer.json") + " --val-split tail > " + dir.file("prep.log") + " 2>&1";
    REQUIRE(std::system(prepare.c_str()) == 0);
    std::vector<uint16_t> shards = read_token_shard(dir.file("prep/train_000000.bin"));
    const std::vector<uint16_t> val = read_token_shard(dir.file("prep/val_000000.bin"));
    shards.insert(shards.end(), val.begin(), val.end());
    std::vector<int> expected = {0};  // <|begin_of_text|>
    const std::vector<int> theirs = read_ids(dir.file("llama3/0.ids"));
    expected.insert(expected.end(), theirs.begin(), theirs.end());
    CHECK(first_difference(std::vector<int>(shards.begin(), shards.end()), expected) == -1);
}

TEST_CASE("tokenizer.json files this engine cannot encode exactly are refused, naming the key") {
    TempDir dir;
    const std::string good = R"({"added_tokens": [], "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
        "post_processor": null, "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": null, "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})";
    write_file(dir.file("good.json"), good);
    const HfTokenizer tok = HfTokenizer::load(dir.file("good.json"));
    CHECK(tok.encode("abab") == std::vector<int>{2, 2});
    CHECK_THROWS_WITH(tok.encode("c"), Catch::Contains("the byte 99 has no token"));
    CHECK_THROWS_WITH(tok.decode(std::vector<int>{7}), Catch::Contains("token id 7 is not in the vocab"));
    auto refused = [&](const std::string& what, const std::string& instead, const std::string& message) {
        INFO(instead);
        std::string text = good;
        REQUIRE(text.find(what) != std::string::npos);
        text.replace(text.find(what), what.size(), instead);
        write_file(dir.file("bad.json"), text);
        CHECK_THROWS_WITH(HfTokenizer::load(dir.file("bad.json")), Catch::Contains(message));
    };
    refused(R"("normalizer": null)", R"("normalizer": {"type": "NFC"})", "normalizer: 'NFC' is not supported");
    refused(R"("type": "BPE")", R"("type": "WordPiece")", "model.type: 'WordPiece' is not supported");
    refused(R"("dropout": null)", R"("dropout": 0.1)", "model.dropout: is not supported");
    refused(R"(["a b"])", R"(["a c"])", "names a token not in the vocab");
    refused(R"("type": "ByteLevel", "add_prefix_space": false, "use_regex": true)", R"("type": "Whitespace")",
            "pre_tokenizer.type: 'Whitespace' is not supported");
    refused(R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})", "null", "no ByteLevel step");
    refused(R"("added_tokens": [])", R"("added_tokens": [{"id": 3, "content": "<s>", "lstrip": true}])",
            "added_tokens.lstrip: true is not supported");
    refused(R"({"type": "ByteLevel", "add_prefix_space": false, "use_regex": true})",
            R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated"})", "the regex does not compile");
    refused(R"("vocab": {"a": 0)", R"("vocab": {"a": -5)", "model.vocab: id -5 out of range");
    write_file(dir.file("cut.json"), good.substr(0, good.size() / 2));
    CHECK_THROWS_WITH(HfTokenizer::load(dir.file("cut.json")), Catch::Contains("is not valid JSON"));
    CHECK_THROWS_AS(HfTokenizer::load(dir.file("missing.json")), Error);
}
