// tests/core/test_prepare.cpp: prepare_corpus on real corpora formats. A JSON-lines export of the
// bundled Bible (zstd, then gzip in a folder) with a Llama-3-shaped tokenizer.json of 128,256 ids
// (tests/core/hf_big_vocab.py, trained with `tokenizers` in .venv) gives uint32 shards holding exactly
// the ids `tokenizers` gives each document, split by whole documents; bad input is refused with its
// file and line and leaves nothing behind (or is skipped and counted); a preparation killed after a
// finished shard resumes and ends with the same bytes as one that ran through; a tail split across
// many small shards equals the same split in one shard, and is what a split by documents falls back
// to for a corpus of one document.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/corpus.h"
#include "core/corpus_splits.h"
#include "core/data_loader.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/token_shard.h"
#include "tests/core/temp_dir.h"

using namespace arch;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::vector<uint32_t> split_ids(const std::string& dir, const char* split) {
    std::vector<uint32_t> ids;
    for (int i = 0;; ++i) {
        char name[32];
        std::snprintf(name, sizeof(name), "%s_%06d.bin", split, i);
        const std::string path = (fs::path(dir) / name).string();
        if (!fs::exists(path)) break;
        const std::vector<uint32_t> part = read_token_ids(path);
        ids.insert(ids.end(), part.begin(), part.end());
    }
    return ids;
}

// The files a preparation leaves in dir, by name (none if there is no dir).
std::vector<std::string> names_in(const std::string& dir) {
    std::vector<std::string> names;
    if (!fs::exists(dir)) return names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string jsonl_document(int i) {
    std::string words;
    for (int w = 0; w < 40 + i % 17; ++w) words += (w % 7 ? "word" : "Line") + std::to_string((i * 31 + w) % 97) + " ";
    return R"({"id": )" + std::to_string(i) + R"(, "text": "Document )" + std::to_string(i) + R"(:\n)" + words + R"("})";
}

std::string jsonl_corpus(int documents) {
    std::string s;
    for (int i = 0; i < documents; ++i) s += jsonl_document(i) + "\n";
    return s;
}

PrepareOptions options(const std::string& input, const std::string& out) {
    PrepareOptions o;
    o.inputs = {input};
    o.out_dir = out;
    o.vocab_size = 300;
    o.val = ValSplit{0.1, 0, true, 3};
    o.threads = 2;
    return o;
}

}  // namespace

TEST_CASE("a JSON-lines corpus with a 128,256-id tokenizer.json: uint32 shards of exactly the ids of `tokenizers`") {
    TempDir dir;
    const std::string python = ".venv/bin/python";
    INFO("needs " << python << " with tokenizers: run scripts/install_deps.sh");
    REQUIRE(file_exists(python));
    REQUIRE(std::system((python + " tests/core/hf_big_vocab.py " + dir.path.string() + " data/kjv.txt.zst > " +
                         dir.file("fixture.log") + " 2>&1").c_str()) == 0);
    // expected.ids: per document, its count and then the ids `tokenizers` gives it.
    const std::string raw = read_file_bytes(dir.file("expected.ids"));
    std::vector<uint32_t> all(raw.size() / 4);
    std::memcpy(all.data(), raw.data(), all.size() * 4);
    std::vector<std::vector<uint32_t>> docs;
    for (size_t i = 0; i < all.size(); i += 1 + all[i]) docs.emplace_back(all.begin() + static_cast<long>(i + 1), all.begin() + static_cast<long>(i + 1 + all[i]));
    REQUIRE(docs.size() > 1000);

    PrepareOptions o = options(dir.file("corpus.jsonl.zst"), dir.file("prep"));
    o.tokenizer_path = dir.file("tokenizer.json");
    o.val = ValSplit{0.05, 0, true, 7};
    prepare_corpus(o);
    // Each document, its <|begin_of_text|> (128000) first, goes whole to the split its hash names.
    std::vector<uint32_t> train, val;
    for (size_t d = 0; d < docs.size(); ++d) {
        std::vector<uint32_t>& to = document_in_val(d, 7, 0.05) ? val : train;
        to.push_back(128000);
        to.insert(to.end(), docs[d].begin(), docs[d].end());
    }
    CHECK(read_token_shard_info(dir.file("prep/train_000000.bin")).token_bytes == 4);
    const std::vector<uint32_t> got_train = split_ids(dir.file("prep"), "train"), got_val = split_ids(dir.file("prep"), "val");
    CHECK(got_train == train);
    CHECK(got_val == val);
    CHECK(val.size() * 40 > train.size());  // about 5%
    CHECK(std::count_if(train.begin(), train.end(), [](uint32_t t) { return t > 65535 && t != 128000; }) * 4 > static_cast<long>(train.size()));
    DataLoader loader(dir.file("prep/train_*.bin"), 4, 64, DataOrder::shuffled, 1, 128256);
    std::vector<int> x(4 * 64), y(4 * 64);
    loader.next_batch(x.data(), y.data());
    CHECK(*std::max_element(x.begin(), x.end()) > 65535);

    // The same corpus as gzip, in a folder: the same shards.
    fs::create_directories(dir.file("gz"));
    REQUIRE(std::system(("zstd -dqc " + dir.file("corpus.jsonl.zst") + " | gzip -c > " + dir.file("gz/corpus.jsonl.gz")).c_str()) == 0);
    o.inputs = {dir.file("gz")};
    o.out_dir = dir.file("prep_gz");
    o.threads = 1;
    prepare_corpus(o);
    CHECK(read_file_bytes(dir.file("prep_gz/train_000000.bin")) == read_file_bytes(dir.file("prep/train_000000.bin")));
    CHECK(read_file_bytes(dir.file("prep_gz/val_000000.bin")) == read_file_bytes(dir.file("prep/val_000000.bin")));
}

TEST_CASE("bad input is refused with its file and line and leaves nothing behind") {
    TempDir dir;
    const std::string out = dir.file("out");
    auto refused = [&](const std::string& name, const std::string& content, const std::vector<std::string>& says) {
        INFO(name);
        write_file(dir.file(name), content);
        fs::remove_all(out);
        std::string message;
        try {
            prepare_corpus(options(dir.file(name), out));
        } catch (const Error& e) {
            message = e.what();
        }
        for (const std::string& s : says) CHECK_THAT(message, Contains(s));
        CHECK(names_in(out).empty());  // no shard, .tmp, PROGRESS, DONE or tokenizer
    };
    const std::string good = jsonl_corpus(200);
    refused("bad_json.jsonl", jsonl_document(0) + "\n" + jsonl_document(1) + "\n{\"text\": \"unterminated\n" + good,
            {"bad_json.jsonl' line 3", "invalid JSON", "--skip-bad-lines"});
    refused("no_field.jsonl", jsonl_document(0) + "\n{\"body\": \"x\"}\n" + good, {"no_field.jsonl' line 2", "no \"text\" field"});
    refused("not_string.jsonl", good + "{\"text\": 17}\n", {"not_string.jsonl' line 201", "is number, expected a string"});
    refused("bad_utf8.jsonl", jsonl_document(0) + "\n{\"text\": \"caf\xc3\"}\n" + good, {"bad_utf8.jsonl' line 2", "invalid UTF-8"});
    // A truncated zstd frame, found after the good part of it was read.
    write_file(dir.file("whole.jsonl"), good + good);
    REQUIRE(std::system(("zstd -qf " + dir.file("whole.jsonl") + " -o " + dir.file("whole.jsonl.zst")).c_str()) == 0);
    const std::string z = read_file_bytes(dir.file("whole.jsonl.zst"));
    refused("cut.jsonl.zst", z.substr(0, z.size() - 20), {"cut.jsonl.zst", "truncated", "zstd frame ends early"});
    refused("cut.jsonl.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10), {"cut.jsonl.gz", "truncated"});
    refused("notes.csv", "a,b\n", {"notes.csv", "not a corpus file", ".jsonl"});

    // A tokenizer whose ids do not fit uint32 shards.
    write_file(dir.file("huge.json"), R"({"added_tokens": [], "normalizer": null,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
        "post_processor": null, "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": null, "vocab": {"a": 0, "b": 4294967296}, "merges": []}})");
    write_file(dir.file("ok.jsonl"), good);
    PrepareOptions o = options(dir.file("ok.jsonl"), out);
    o.tokenizer_path = dir.file("huge.json");
    fs::remove_all(out);
    CHECK_THROWS_WITH(prepare_corpus(o), Contains("huge.json") && Contains("4294967296") && Contains("exceeds uint32"));
    CHECK(names_in(out).empty());
    CHECK_THROWS_WITH(token_bytes_for_vocab(int64_t{1} << 33), Contains("exceeds uint32"));
}

TEST_CASE("zstd and gzip inputs that expand a hundredfold give the shards of the plain file") {
    TempDir dir;
    std::string repeated;
    for (int i = 0; i < 3; ++i) {
        std::string text;
        for (int w = 0; w < 90000; ++w) text += "word" + std::to_string(w % 997) + " ";
        repeated += R"({"text": ")" + text + "\"}\n";
    }
    write_file(dir.file("rep.jsonl"), repeated);
    REQUIRE(std::system(("zstd -qf " + dir.file("rep.jsonl") + " && gzip -kf " + dir.file("rep.jsonl")).c_str()) == 0);
    prepare_corpus(options(dir.file("rep.jsonl"), dir.file("plain")));
    for (const char* ext : {".zst", ".gz"}) {
        INFO(ext);
        PrepareOptions o = options(dir.file(std::string("rep.jsonl") + ext), dir.file(std::string("out") + ext));
        o.tokenizer_path = dir.file("plain/tokenizer.bin");
        prepare_corpus(o);
        CHECK(split_ids(dir.file(std::string("out") + ext), "train") == split_ids(dir.file("plain"), "train"));
        CHECK(split_ids(dir.file(std::string("out") + ext), "val") == split_ids(dir.file("plain"), "val"));
    }
}

TEST_CASE("--skip-bad-lines drops bad lines and counts them; the rest is prepared as without them") {
    TempDir dir;
    const std::string good = jsonl_corpus(300);
    write_file(dir.file("good.jsonl"), good);
    write_file(dir.file("mixed.jsonl"), "{\"text\": 1}\nnot json\n" + good + "{\"title\": \"x\"}\n\n   \n");
    prepare_corpus(options(dir.file("good.jsonl"), dir.file("a")));
    PrepareOptions o = options(dir.file("mixed.jsonl"), dir.file("b"));
    o.input.skip_bad_lines = true;
    prepare_corpus(o);
    CHECK(split_ids(dir.file("a"), "train") == split_ids(dir.file("b"), "train"));
    CHECK(split_ids(dir.file("a"), "val") == split_ids(dir.file("b"), "val"));
    CHECK(read_file_bytes(dir.file("a/tokenizer.bin")) == read_file_bytes(dir.file("b/tokenizer.bin")));
}

TEST_CASE("a preparation killed after a finished shard resumes there and ends with the same bytes") {
    TempDir dir;
    write_file(dir.file("corpus.jsonl"), jsonl_corpus(3000));
    PrepareOptions o = options(dir.file("corpus.jsonl"), dir.file("whole"));
    o.shard_tokens = 4096;
    prepare_corpus(o);
    const std::vector<std::string> whole = names_in(dir.file("whole"));
    REQUIRE(std::count_if(whole.begin(), whole.end(), [](const std::string& n) { return n.starts_with("train_"); }) > 8);

    o.out_dir = dir.file("cut");
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // dies at its 5th shard like a killed process, after writing past the saved progress
        o.on_shard = [&](uint64_t shards) {
            if (shards < 5) return;
            for (const auto& e : fs::directory_iterator(o.out_dir))
                if (e.path().extension() == ".tmp") std::ofstream(e.path(), std::ios::app) << "tokens not in PROGRESS";
            _exit(0);
        };
        try {
            prepare_corpus(o);
        } catch (...) {
        }
        _exit(1);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(fs::exists(dir.file("cut/PROGRESS")));
    REQUIRE_FALSE(fs::exists(dir.file("cut/DONE")));
    const auto kept = fs::last_write_time(dir.file("cut/train_000000.bin"));

    o.on_shard = nullptr;
    prepare_corpus(o);
    CHECK(fs::last_write_time(dir.file("cut/train_000000.bin")) == kept);  // finished shards are kept
    CHECK_FALSE(fs::exists(dir.file("cut/PROGRESS")));
    REQUIRE(names_in(dir.file("cut")) == whole);
    for (const std::string& name : whole) {
        INFO(name);
        CHECK(read_file_bytes(dir.file("cut/" + name)) == read_file_bytes(dir.file("whole/" + name)));
    }
}

TEST_CASE("a tail split across many small shards equals the same split in one shard") {
    TempDir dir;
    write_file(dir.file("corpus.jsonl"), jsonl_corpus(2000));
    PrepareOptions o = options(dir.file("corpus.jsonl"), dir.file("one"));
    o.val = ValSplit{0.3, 0};
    prepare_corpus(o);
    o.out_dir = dir.file("many");
    o.shard_tokens = 5000;
    prepare_corpus(o);
    CHECK(split_ids(dir.file("one"), "train") == split_ids(dir.file("many"), "train"));
    CHECK(split_ids(dir.file("one"), "val") == split_ids(dir.file("many"), "val"));
    CHECK(fs::exists(dir.file("many/train_000002.bin")));
    CHECK(fs::exists(dir.file("many/val_000001.bin")));
    for (const std::string& name : names_in(dir.file("many")))
        if (name.starts_with("train_") || name.starts_with("val_")) CHECK(read_token_shard_count(dir.file("many/" + name)) <= 5000);

    // One long document split by documents: no document falls into val, so val is the tail.
    write_file(dir.file("one.txt"), read_file_bytes(dir.file("corpus.jsonl")));
    o = options(dir.file("one.txt"), dir.file("by_document"));
    prepare_corpus(o);
    o.out_dir = dir.file("by_tail");
    o.val = ValSplit{o.val.fraction, 0};
    prepare_corpus(o);
    CHECK(split_ids(dir.file("by_document"), "val") == split_ids(dir.file("by_tail"), "val"));
    CHECK(split_ids(dir.file("by_document"), "train") == split_ids(dir.file("by_tail"), "train"));
    CHECK_FALSE(split_ids(dir.file("by_tail"), "val").empty());
}
