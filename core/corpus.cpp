// core/corpus.cpp: prepare_corpus: stream text (plain or zstd) -> train tokenizer -> encode -> shards.
// The text is streamed in chunks cut where the pre-splitter always cuts, so chunking never changes
// the tokens; the token stream itself is held in memory (2 bytes a token) to split off val at the end.
#include "core/corpus.h"

#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <span>
#include <sstream>
#include <string_view>

#include "core/error.h"
#include "core/file_io.h"
#include "core/install_paths.h"
#include "core/log.h"
#include "core/token_shard.h"
#include "core/tokenizer.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

constexpr size_t kReadBytes = 1 << 20;
constexpr size_t kMaxPendingBytes = 64 << 20;  // a text with no safe cut is encoded in pieces this big
constexpr const char* kManifestHeader = "archipelago prepared corpus v1\n";

// Calls fn with the raw (decompressed if .zst) bytes of path, in order, in chunks.
void read_text_chunks(const std::string& path, const std::function<void(std::string_view)>& fn) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("corpus: input '" + path + "' cannot be opened: " + std::strerror(errno));
    std::vector<char> buf(kReadBytes);
    if (!std::string_view(path).ends_with(".zst")) {
        while (in) {
            in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
            if (in.gcount() > 0) fn(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
        }
        if (in.bad()) throw Error("corpus: reading input '" + path + "' failed");
        return;
    }
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dctx) throw Error("corpus: cannot create a zstd decompressor");
    std::vector<char> out(ZSTD_DStreamOutSize());
    size_t last = 0;
    bool any = false;
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        ZSTD_inBuffer input{buf.data(), static_cast<size_t>(in.gcount()), 0};
        any = any || input.size > 0;
        while (input.pos < input.size) {
            ZSTD_outBuffer output{out.data(), out.size(), 0};
            last = ZSTD_decompressStream(dctx.get(), &output, &input);
            if (ZSTD_isError(last))
                throw Error("corpus: input '" + path + "' is not valid zstd data: " + ZSTD_getErrorName(last));
            if (output.pos > 0) fn(std::string_view(out.data(), output.pos));
        }
    }
    if (in.bad()) throw Error("corpus: reading input '" + path + "' failed");
    if (!any) throw Error("corpus: input '" + path + "' is empty, expected a zstd frame");
    if (last != 0) throw Error("corpus: input '" + path + "' is truncated: its zstd frame ends early");
}

// Like read_text_chunks, but every chunk ends where the pre-splitter cuts regardless of what follows.
void read_text_pieces(const std::string& path, const std::function<void(std::string_view)>& fn) {
    std::string pending;
    read_text_chunks(path, [&](std::string_view chunk) {
        // Only the new bytes (and the one before them) can hold a cut: the rest was searched already.
        const size_t from = pending.empty() ? 0 : pending.size() - 1;
        pending.append(chunk);
        size_t cut = pretoken_safe_prefix(std::string_view(pending).substr(from));
        if (cut > 0) cut += from;
        if (cut == 0 && pending.size() > kMaxPendingBytes) cut = pending.size();
        if (cut > 0) {
            fn(std::string_view(pending).substr(0, cut));
            pending.erase(0, cut);
        }
    });
    if (!pending.empty()) fn(pending);
}

uint64_t fnv1a_file(const std::string& path) {
    uint64_t h = 1469598103934665603ULL;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("corpus: '" + path + "' cannot be opened: " + std::strerror(errno));
    std::vector<char> buf(kReadBytes);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        for (std::streamsize i = 0; i < in.gcount(); i++) {
            h ^= static_cast<unsigned char>(buf[static_cast<size_t>(i)]);
            h *= 1099511628211ULL;
        }
    }
    return h;
}

// What decides the output: the inputs' names, sizes and contents, and the settings.
std::string manifest(const std::vector<std::string>& inputs, int vocab_size, double val_fraction,
                     const std::string& tokenizer_path) {
    std::ostringstream m;
    m << kManifestHeader << "vocab_size " << vocab_size << "\nval_fraction " << val_fraction << "\n";
    if (!tokenizer_path.empty())
        m << "tokenizer " << fs::path(tokenizer_path).filename().string() << " " << std::hex
          << fnv1a_file(tokenizer_path) << std::dec << "\n";
    for (const std::string& p : inputs)
        m << "input " << fs::path(p).filename().string() << " " << fs::file_size(p) << " " << std::hex
          << fnv1a_file(p) << std::dec << "\n";
    return m.str();
}

std::string read_small_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    if (in) ss << in.rdbuf();
    return ss.str();
}

std::string shard_name(const std::string& out_dir, const char* split, size_t index) {
    char name[32];
    std::snprintf(name, sizeof(name), "%s_%06zu.bin", split, index);
    return (fs::path(out_dir) / name).string();
}

// Removes what an earlier (maybe interrupted) preparation left, so old shards never match a glob.
void clear_previous(const std::string& out_dir) {
    std::error_code ec;
    fs::remove(fs::path(out_dir) / "DONE", ec);
    for (const auto& entry : fs::directory_iterator(out_dir)) {
        const std::string name = entry.path().filename().string();
        const bool shard = (name.starts_with("train_") || name.starts_with("val_")) &&
                           (name.ends_with(".bin") || name.ends_with(".bin.tmp"));
        if (shard) fs::remove(entry.path());
    }
}

size_t write_shards(const std::string& out_dir, const char* split, std::span<const uint16_t> tokens) {
    size_t index = 0;
    for (uint64_t off = 0; off < tokens.size(); off += kMaxShardTokens, index++) {
        const auto n = static_cast<size_t>(std::min<uint64_t>(kMaxShardTokens, tokens.size() - off));
        write_token_shard(shard_name(out_dir, split, index), tokens.subspan(off, n));
    }
    return index;
}

PreparedCorpus corpus_paths(const std::string& out_dir, const std::string& tokenizer_path) {
    return {(fs::path(out_dir) / "train_*.bin").string(), (fs::path(out_dir) / "val_*.bin").string(),
            tokenizer_path.empty() ? (fs::path(out_dir) / "tokenizer.bin").string() : tokenizer_path};
}

void check_inputs(const std::vector<std::string>& input_files, double val_fraction, const std::string& tokenizer_path) {
    if (input_files.empty()) throw Error("corpus: no input files given; expected one or more .txt or .txt.zst files");
    for (const std::string& p : input_files)
        if (!fs::is_regular_file(p)) throw Error("corpus: input '" + p + "' does not exist or is not a file");
    if (!tokenizer_path.empty() && !fs::is_regular_file(tokenizer_path))
        throw Error("corpus: tokenizer '" + tokenizer_path + "' does not exist");
    if (!(val_fraction >= 0.0 && val_fraction <= 0.5))
        throw Error("corpus: val_fraction must be between 0 and 0.5, got " + std::to_string(val_fraction));
}

Tokenizer train_tokenizer(const std::vector<std::string>& input_files, int vocab_size) {
    TokenizerTrainer trainer;
    for (const std::string& p : input_files) {
        log::get("data")->info("prepare: counting words in {}", p);
        read_text_pieces(p, [&](std::string_view text) { trainer.add_text(text); });
    }
    return trainer.train(vocab_size, [](int done, int total) {
        log::get("data")->info("prepare: training tokenizer: merges {}/{}", done, total);
    });
}

std::vector<uint16_t> encode_inputs(const std::vector<std::string>& input_files, const Tokenizer& tok) {
    std::vector<uint16_t> tokens;
    uint64_t bytes = 0, next_report = 0;
    for (const std::string& p : input_files) {
        tokens.push_back(static_cast<uint16_t>(tok.eot_token()));
        read_text_pieces(p, [&](std::string_view text) {
            for (int id : tok.encode(text)) tokens.push_back(static_cast<uint16_t>(id));
            bytes += text.size();
            if (bytes >= next_report) {
                log::get("data")->info("prepare: encoding: {:.1f} MB, {} tokens", bytes / 1e6, tokens.size());
                next_report = bytes + (16 << 20);
            }
        });
    }
    log::get("data")->info("prepare: encoded {:.1f} MB into {} tokens", bytes / 1e6, tokens.size());
    return tokens;
}

}  // namespace

PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, double val_fraction, const std::string& tokenizer_path) {
    check_inputs(input_files, val_fraction, tokenizer_path);
    const std::string done_text = manifest(input_files, vocab_size, val_fraction, tokenizer_path);
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec) throw Error("corpus: cannot create output directory '" + out_dir + "': " + ec.message());
    clear_previous(out_dir);
    const PreparedCorpus result = corpus_paths(out_dir, tokenizer_path);

    Tokenizer tok = tokenizer_path.empty() ? train_tokenizer(input_files, vocab_size) : Tokenizer::load(tokenizer_path);
    if (!tok.can_encode())
        throw Error("corpus: tokenizer '" + tokenizer_path + "' can only decode (llm.c format); give an Archipelago tokenizer");
    if (tok.vocab_size() > 65536)
        throw Error("corpus: tokenizer has " + std::to_string(tok.vocab_size()) + " ids; shards hold uint16, at most 65536");
    if (tokenizer_path.empty()) tok.save(result.tokenizer_path);

    const std::vector<uint16_t> tokens = encode_inputs(input_files, tok);
    if (tokens.size() < 2)
        throw Error("corpus: the inputs hold only " + std::to_string(tokens.size()) +
                    " tokens; expected enough text for a train and a val split");
    const uint64_t n = tokens.size();
    const auto wanted = static_cast<uint64_t>(std::ceil(val_fraction * static_cast<double>(n)));
    const uint64_t val_n = std::min(std::max(wanted, kMinValTokens), n / 2);
    const std::span<const uint16_t> all(tokens);
    const size_t train_shards = write_shards(out_dir, "train", all.first(n - val_n));
    const size_t val_shards = write_shards(out_dir, "val", all.last(val_n));

    const std::string done = (fs::path(out_dir) / "DONE").string();
    write_file_atomic(done, std::span(reinterpret_cast<const uint8_t*>(done_text.data()), done_text.size()));
    log::get("data")->info("prepare: wrote {} train tokens in {} shard(s) and {} val tokens in {} shard(s) to {}",
                           n - val_n, train_shards, val_n, val_shards, out_dir);
    return result;
}

PreparedCorpus ensure_bundled_corpus(const std::string& input, const std::string& out_dir) {
    if (!fs::is_regular_file(input))
        throw Error("corpus: the bundled corpus '" + input + "' is missing (data/make_kjv.sh regenerates it)");
    constexpr int kVocab = 4096;
    constexpr double kValFraction = 0.02;
    fs::create_directories(out_dir);
    const FileLock lock((fs::path(out_dir) / ".lock").string());  // islands starting together prepare once
    const std::string done = (fs::path(out_dir) / "DONE").string();
    const PreparedCorpus paths = corpus_paths(out_dir, "");
    if (fs::is_regular_file(done) && fs::is_regular_file(paths.tokenizer_path) &&
        read_small_file(done) == manifest({input}, kVocab, kValFraction, ""))
        return paths;
    return prepare_corpus({input}, out_dir, kVocab, kValFraction, "");
}

PreparedCorpus ensure_bundled_corpus() {
    return ensure_bundled_corpus(shipped_file("kjv.txt.zst"), (fs::path(user_data_dir()) / "corpus" / "kjv").string());
}

}  // namespace arch
