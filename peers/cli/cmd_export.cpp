// peers/cli/cmd_export.cpp: `archipelago export --safetensors`: an llm.c checkpoint to a folder that
// Hugging Face transformers loads as GPT2LMHeadModel.
#include <cstdio>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/hf_export.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"

namespace arch::cli {

int cmd_export(const std::vector<std::string>& argv) {
    Args args("export", argv, "usage: archipelago export --safetensors --checkpoint FILE --out DIR\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const bool safetensors = args.flag("safetensors");
    const std::string ckpt = args.str("checkpoint", "");
    const std::string out = args.str("out", "");
    args.finish();
    if (!safetensors) throw Error("export: say the format: --safetensors (the only one so far)\n" + args.usage());
    if (ckpt.empty() || out.empty()) throw Error("export: give --checkpoint and --out\n" + args.usage());
    const ModelConfig config = read_checkpoint_config(ckpt);
    export_hf_gpt2(out, config, read_checkpoint_params(ckpt, config));
    std::printf("exported %s (%s) to %s/model.safetensors and %s/config.json\n", ckpt.c_str(),
                describe(config).c_str(), out.c_str(), out.c_str());
    return 0;
}

}  // namespace arch::cli
