// peers/cli/cmd_export.cpp: `archipelago export --safetensors`: a checkpoint (llm.c's GPT-2, or a
// native Llama one) to a folder that Hugging Face transformers loads as GPT2LMHeadModel or
// LlamaForCausalLM.
#include <cstdio>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/hf_export.h"
#include "peers/cli/commands.h"

namespace arch::cli {

void add_export(CLI::App& app, int& exit_code) {
    struct Flags {
        bool safetensors = false;
        std::string checkpoint, out;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("export", "export a checkpoint for Hugging Face transformers (--safetensors)");
    cmd->add_flag("--safetensors", f->safetensors, "write model.safetensors + config.json (the only format so far)");
    cmd->add_option("--checkpoint", f->checkpoint, "a checkpoint (model.bin: llm.c GPT-2 or native Llama)")->required();
    cmd->add_option("--out", f->out, "the folder to write")->required();
    cmd->callback([f, &exit_code] {
        if (!f->safetensors) throw Error("export: say the format: --safetensors (the only one so far)");
        const ModelConfig config = read_checkpoint_config(f->checkpoint);
        export_hf(f->out, config, read_checkpoint_params(f->checkpoint, config));
        std::printf("exported %s (%s) to %s/model.safetensors and %s/config.json\n", f->checkpoint.c_str(),
                    describe(config).c_str(), f->out.c_str(), f->out.c_str());
        exit_code = 0;
    });
}

}  // namespace arch::cli
