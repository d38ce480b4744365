// peers/cli/cmd_sample.cpp: `archipelago sample`: generate text from a checkpoint (GPT-2 or Llama).
#include <cstdio>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sampling.h"
#include "core/tokenizer.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"

namespace arch::cli {

namespace {

struct SampleFlags {
    std::string checkpoint, tokenizer, prompt, device = "cpu";
    SamplingConfig sc;
};

void run_sample(const SampleFlags& f) {
    const std::string& ckpt = f.checkpoint;
    const std::string dir = ckpt.find('/') == std::string::npos ? "." : ckpt.substr(0, ckpt.find_last_of('/'));
    const std::string tokenizer_path = f.tokenizer.empty() ? dir + "/tokenizer.bin" : f.tokenizer;
    const std::string& prompt = f.prompt;
    const std::string& device = f.device;
    SamplingConfig sc = f.sc;
    const ModelConfig config = read_checkpoint_config(ckpt);
    const Tokenizer tok = Tokenizer::load(tokenizer_path);
    if (tok.vocab_size() > config.vocab_size)
        throw Error("sample: tokenizer '" + tokenizer_path + "' has " + std::to_string(tok.vocab_size()) +
                    " tokens, the model only " + std::to_string(config.vocab_size));
    const std::unique_ptr<Model> model_ptr = diloco::make_model(config, device);
    Model& model = *model_ptr;
    model.set_params(read_checkpoint_params(ckpt, config));
    std::vector<int> tokens = {tok.eot_token()};
    if (!prompt.empty()) {
        const std::vector<int> p = tok.encode(prompt);
        tokens.insert(tokens.end(), p.begin(), p.end());
    }
    sc.stop_token = tok.eot_token();
    std::fputs(prompt.c_str(), stdout);
    generate(model, tokens, sc, [&](int t) {
        if (t != tok.eot_token()) std::fputs(tok.decode_token(t).c_str(), stdout);
        std::fflush(stdout);
    });
    std::fputs("\n", stdout);
}

}  // namespace

void add_sample(CLI::App& app, int& exit_code) {
    auto f = std::make_shared<SampleFlags>();
    f->sc.max_new_tokens = 200;
    f->sc.temperature = 0.8f;
    f->sc.top_k = 40;
    f->sc.seed = 1;
    CLI::App* cmd = app.add_subcommand("sample", "generate text from a checkpoint");
    cmd->add_option("--checkpoint", f->checkpoint, "a checkpoint (model.bin: llm.c GPT-2 or native Llama)")->required();
    cmd->add_option("--tokenizer", f->tokenizer, "tokenizer file (default: tokenizer.bin beside the checkpoint)");
    cmd->add_option("--prompt", f->prompt, "text to continue");
    cmd->add_option("--tokens", f->sc.max_new_tokens, "tokens to generate")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--temperature", f->sc.temperature, "sampling temperature")->check(CLI::Range(0.0, 100.0));
    cmd->add_option("--top-k", f->sc.top_k, "sample among the k most likely tokens (0: all)")->check(CLI::Range(0, 1 << 24));
    cmd->add_option("--seed", f->sc.seed, "sampling seed");
    cmd->add_option("--device", f->device, "cpu, cuda or cuda:N");
    cmd->callback([f, &exit_code] {
        run_sample(*f);
        exit_code = 0;
    });
}

}  // namespace arch::cli
