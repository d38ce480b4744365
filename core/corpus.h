// core/corpus.h: turn a corpus (text or JSON-lines files, plain, zstd or gzip: core/text_inputs.h)
// into llm.c train/val token shards plus the tokenizer that made them. Each document is preceded by
// the tokenizer's document separator (Tokenizer::document_separator: BOS for Llama 3, <|endoftext|>
// for GPT-2, llm.c's conventions). Shards are uint16, or uint32 for a vocabulary above 65,536 ids.
// Encoding runs on every core, in input order, in constant memory. Val is whole documents chosen by a
// seeded hash, the tail of the token stream, or every k-th chunk of it (ValSplit).
// out_dir/DONE is written last. out_dir/PROGRESS, rewritten each time a shard is finished, lets an
// interrupted preparation of the same inputs and settings resume there; an error removes the
// preparation's files instead, so a folder holds a finished preparation or nothing of it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/text_inputs.h"

namespace arch {

struct PreparedCorpus {
    std::string train_pattern;   // e.g. out_dir/train_*.bin, for DataLoader
    std::string val_pattern;     // out_dir/val_*.bin
    std::string tokenizer_path;  // the tokenizer the shards were encoded with
};

constexpr uint64_t kMaxShardTokens = 100'000'000;  // llm.c's shard size
constexpr uint64_t kMinValTokens = 4 * 1024 + 1;   // one llm.c-default val batch (B=4, T=1024)

// Which tokens of the stream (all documents, in input order) go to val; the rest, in order, is train.
struct ValSplit {
    double fraction = 0.02;
    // Unless by_document: 0, "tail": val is the last `fraction` of the tokens, at least kMinValTokens,
    // at most half; fraction in [0, 0.5]. > 0, "spread": the stream is cut into chunks of chunk_tokens
    // tokens and chunks k-1, 2k-1, 3k-1, ... go to val, with k = round(1 / fraction) (so val holds about
    // 1/k of the tokens, from all over the stream); fraction in (0, 0.5], and the stream must reach
    // chunk k-1.
    uint64_t chunk_tokens = 0;
    // "documents": each document goes to val, whole, when a hash of (seed, its index) falls below
    // fraction, so no document is in both splits and the choice is the same on every machine;
    // fraction in (0, 0.5]. Where no document falls into val (a corpus of one long document), val is
    // the tail instead, with a warning.
    bool by_document = false;
    uint64_t seed = 0;
};

struct PrepareOptions {
    std::vector<std::string> inputs;  // files, folders and globs (expand_inputs)
    std::string out_dir;
    int vocab_size = 4096;       // of the tokenizer trained when tokenizer_path is empty
    std::string tokenizer_path;  // ours, or a Hugging Face tokenizer.json; empty: train one into out_dir
    ValSplit val{0.02, 0, true, 0};
    InputOptions input;
    int threads = 0;  // encoding threads; 0: one per core
    uint64_t shard_tokens = kMaxShardTokens;
    // Called each time a shard is finished and the progress saved (shards of both splits so far): a
    // seam for whoever shows progress, and for tests that stop the work there.
    std::function<void(uint64_t shards)> on_shard;
};

// Prepares the corpus (progress on the "data" log: MB read, tokens, MB/s, ETA). A finished preparation
// of the same inputs and settings in out_dir is kept as it is; an interrupted one resumes.
PreparedCorpus prepare_corpus(const PrepareOptions& options);

// The same from text files alone (each file one document).
PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, const ValSplit& val, const std::string& tokenizer_path);

// The same with the tail split: val is the last val_fraction of the tokens.
PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, double val_fraction, const std::string& tokenizer_path);

// Prepares the bundled corpus file (kjv.txt.zst) into out_dir (vocab 4096, val fraction 0.02) unless
// out_dir already holds a finished preparation of the same input with the same settings.
PreparedCorpus ensure_bundled_corpus(const std::string& corpus_file, const std::string& out_dir);

// The same for the shipped corpus (core/install_paths.h), into the user's data directory (corpus/kjv).
PreparedCorpus ensure_bundled_corpus();

// The benchmark corpus (data/README.md): 6.3M tokens of public-domain English from Debian packages.
// Unless out_dir already holds a finished preparation of it, runs `python3 script OUT_DIR/text` (data/
// make_bench_corpus.py: the packages' text as plain .txt documents) and prepares those documents with
// a vocab 4096 tokenizer trained on them and a spread val split (every 64th chunk of 4096 tokens).
// Throws arch::Error naming the Debian packages to install when their files are missing;
// package_root, when given, prefixes every package path (tests).
PreparedCorpus ensure_bench_corpus(const std::string& script, const std::string& out_dir,
                                   const std::string& package_root = "");

// The same with the checkout's data/make_bench_corpus.py, into the user's data directory (corpus/bench).
PreparedCorpus ensure_bench_corpus();

}  // namespace arch
