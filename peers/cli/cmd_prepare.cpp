// peers/cli/cmd_prepare.cpp: `archipelago prepare`: text files -> tokenizer + llm.c train/val shards.
#include <cstdio>

#include "core/corpus.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/cli/commands.h"

namespace arch::cli {

namespace {

struct PrepareFlags {
    std::vector<std::string> inputs;
    std::string out, tokenizer;
    int vocab = 4096;
    double val_fraction = 0.02;
    log::Options log;
};

}  // namespace

void add_prepare(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<PrepareFlags>();
    CLI::App* cmd = app.add_subcommand("prepare", "turn text files into a tokenizer and llm.c token shards");
    cmd->add_option("--input", f->inputs, "text files, .txt or .txt.zst; each file is one document")
        ->required()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("--out", f->out, "the folder for the shards and the tokenizer")->required();
    cmd->add_option("--vocab", f->vocab, "tokenizer vocabulary size")->check(CLI::Range(257, 65536));
    cmd->add_option("--val-fraction", f->val_fraction, "the share of tokens kept for validation")
        ->check(CLI::Range(1e-9, 0.499999));
    cmd->add_option("--tokenizer", f->tokenizer, "use this tokenizer instead of training one");
    add_log_flags(*cmd, f->log);
    cmd->callback([f, &exit_code] {
        log::configure(f->log);
        const PreparedCorpus c = prepare_corpus(f->inputs, f->out, f->vocab, f->val_fraction, f->tokenizer);
        std::printf("train shards: %s\nval shards:   %s\ntokenizer:    %s\n", c.train_pattern.c_str(),
                    c.val_pattern.c_str(), c.tokenizer_path.c_str());
        exit_code = 0;
    });
}

}  // namespace arch::cli
