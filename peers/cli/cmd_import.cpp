// peers/cli/cmd_import.cpp: `archipelago import --hf DIR --out FILE`: a Hugging Face model folder
// (config.json + safetensors, core/hf_import.h) to a checkpoint that train --init, sample and
// run.toml's model.init take: llm.c's for GPT-2, the native safetensors one (with config.json beside
// it) for the Llama family (core/checkpoint.h). Nothing is written unless the whole folder checks out.
#include <cstdio>

#include "core/checkpoint.h"
#include "core/hf_import.h"
#include "peers/cli/commands.h"

namespace arch::cli {

void add_import(CLI::App& app, int& exit_code) {
    struct Flags {
        std::string hf, out;
    };
    auto f = std::make_shared<Flags>();
    CLI::App* cmd = app.add_subcommand("import", "import a Hugging Face model folder (--hf) as a checkpoint");
    cmd->add_option("--hf", f->hf, "a folder with config.json and model.safetensors (or its shards' index)")->required();
    cmd->add_option("--out", f->out, "the checkpoint to write (model.bin; a Llama's also gets config.json beside it)")->required();
    cmd->callback([f, &exit_code] {
        const HfModel m = import_hf(f->hf);
        write_checkpoint(f->out, m.config, m.params);
        std::printf("imported %s (%s, %s, %zu parameters) to %s\n", f->hf.c_str(), m.architecture.c_str(),
                    describe(m.config).c_str(), m.params.size(), f->out.c_str());
        exit_code = 0;
    });
}

}  // namespace arch::cli
