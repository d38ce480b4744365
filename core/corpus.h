// core/corpus.h: turn text files into llm.c train/val token shards plus the tokenizer that made them.
// Each input file is one document, preceded by <|endoftext|> (llm.c's convention). The last
// val_fraction of all tokens (at least kMinValTokens, at most half) is the validation split.
// out_dir/DONE is written last; a directory without it is an interrupted run and is redone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arch {

struct PreparedCorpus {
    std::string train_pattern;   // e.g. out_dir/train_*.bin, for DataLoader
    std::string val_pattern;     // out_dir/val_*.bin
    std::string tokenizer_path;  // the tokenizer the shards were encoded with
};

constexpr uint64_t kMaxShardTokens = 100'000'000;  // llm.c's shard size
constexpr uint64_t kMinValTokens = 4 * 1024 + 1;   // one llm.c-default val batch (B=4, T=1024)

// input_files: .txt, or .txt.zst (zstd, decompressed while streaming). tokenizer_path empty: train
// a vocab_size tokenizer on the inputs and save it as out_dir/tokenizer.bin; otherwise load it
// (vocab_size is then ignored). Progress goes to stderr. Always redoes the work.
PreparedCorpus prepare_corpus(const std::vector<std::string>& input_files, const std::string& out_dir,
                              int vocab_size, double val_fraction, const std::string& tokenizer_path);

// Prepares the bundled corpus file (kjv.txt.zst) into out_dir (vocab 4096, val fraction 0.02) unless
// out_dir already holds a finished preparation of the same input with the same settings.
PreparedCorpus ensure_bundled_corpus(const std::string& corpus_file, const std::string& out_dir);

// The same for the shipped corpus (core/install_paths.h), into the user's data directory (corpus/kjv).
PreparedCorpus ensure_bundled_corpus();

}  // namespace arch
