// peers/cli/cmd_prepare.cpp: `archipelago prepare`: text files -> tokenizer + llm.c train/val shards.
#include <cstdio>
#include <unistd.h>
#include <climits>

#include "core/corpus.h"
#include "core/error.h"
#include "core/file_io.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"

namespace arch::cli {

std::string repo_root() {
    if (const char* home = std::getenv("ARCH_HOME")) return home;
    char exe[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        std::string dir(exe, static_cast<std::size_t>(n));
        for (int up = 0; up < 4; ++up) {
            dir = dir.substr(0, dir.find_last_of('/'));
            if (dir.empty()) break;
            if (file_exists(dir + "/data/kjv.txt.zst")) return dir;
        }
    }
    return ".";
}

int cmd_prepare(const std::vector<std::string>& argv) {
    Args args("prepare", argv,
              "usage: archipelago prepare --input FILE [FILE...] --out DIR [--vocab 4096] [--val-fraction 0.02]\n"
              "                           [--tokenizer FILE]   (inputs: .txt or .txt.zst; each file is one document)\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::vector<std::string> inputs = args.list("input");
    const std::string out = args.str("out", "");
    const int vocab = args.integer("vocab", 4096);
    const double val_fraction = args.real("val-fraction", 0.02);
    const std::string tokenizer = args.str("tokenizer", "");
    args.finish();
    if (inputs.empty()) throw Error("prepare: give at least one --input file\n" + args.usage());
    if (out.empty()) throw Error("prepare: give an --out folder\n" + args.usage());
    if (vocab < 257 || vocab > 65536) throw Error("prepare: --vocab must be in [257, 65536], got " + std::to_string(vocab));
    if (!(val_fraction > 0.0 && val_fraction < 0.5))
        throw Error("prepare: --val-fraction must be in (0, 0.5), got " + std::to_string(val_fraction));
    const PreparedCorpus c = prepare_corpus(inputs, out, vocab, val_fraction, tokenizer);
    std::printf("train shards: %s\nval shards:   %s\ntokenizer:    %s\n", c.train_pattern.c_str(),
                c.val_pattern.c_str(), c.tokenizer_path.c_str());
    return 0;
}

}  // namespace arch::cli
