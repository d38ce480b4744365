// peers/cli/cmd_prepare.cpp: `archipelago prepare`: a corpus (text or JSON lines, plain, zstd or gzip)
// -> tokenizer + llm.c train/val shards (uint16, or uint32 above 65,536 ids), resumable.
#include <cstdio>

#include "core/corpus.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/cli/commands.h"

namespace arch::cli {

namespace {

struct PrepareFlags {
    PrepareOptions o;
    std::string val_split = "documents";
    log::Options log;
};

}  // namespace

void add_prepare(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<PrepareFlags>();
    CLI::App* cmd = app.add_subcommand("prepare", "turn a corpus into a tokenizer and llm.c token shards");
    cmd->add_option("--input", f->o.inputs,
                    "corpus files, folders or globs: .txt (one document a file), .jsonl or .json (one JSON object a "
                    "line), each optionally .zst or .gz")
        ->required()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("--out", f->o.out_dir, "the folder for the shards and the tokenizer")->required();
    cmd->add_option("--vocab", f->o.vocab_size, "vocabulary size of the tokenizer trained when --tokenizer is not given")
        ->check(CLI::Range(257, 65536))
        ->capture_default_str();
    cmd->add_option("--tokenizer", f->o.tokenizer_path, "use this tokenizer (ours or a tokenizer.json) instead of training one");
    cmd->add_option("--val-fraction", f->o.val.fraction, "the share kept for validation")
        ->check(CLI::Range(1e-9, 0.5))
        ->capture_default_str();
    cmd->add_option("--val-split", f->val_split,
                    "documents: whole documents, chosen by a seeded hash (the tail where no document falls into val); "
                    "tail: the last tokens of the stream")
        ->check(CLI::IsMember({"documents", "tail"}))
        ->capture_default_str();
    cmd->add_option("--seed", f->o.val.seed, "the seed of the split by documents")->capture_default_str();
    cmd->add_option("--text-field", f->o.input.text_field, "the JSON field that holds a document")->capture_default_str();
    cmd->add_flag("--skip-bad-lines", f->o.input.skip_bad_lines, "drop and count bad lines instead of stopping at the first");
    cmd->add_option("--shard-tokens", f->o.shard_tokens, "tokens a shard holds at most")
        ->check(CLI::Range(uint64_t{1024}, uint64_t{2147483647}))
        ->capture_default_str();
    cmd->add_option("--threads", f->o.threads, "encoding threads (0: one per core)")->check(CLI::Range(0, 1024))->capture_default_str();
    add_log_flags(*cmd, f->log);
    cmd->callback([f, &exit_code] {
        log::configure(f->log);
        f->o.val.by_document = f->val_split == "documents";
        const PreparedCorpus c = prepare_corpus(f->o);
        std::printf("train shards: %s\nval shards:   %s\ntokenizer:    %s\n", c.train_pattern.c_str(),
                    c.val_pattern.c_str(), c.tokenizer_path.c_str());
        exit_code = 0;
    });
}

}  // namespace arch::cli
