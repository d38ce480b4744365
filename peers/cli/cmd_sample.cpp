// peers/cli/cmd_sample.cpp: `archipelago sample`: generate text from an llm.c checkpoint.
#include <cstdio>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/sampling.h"
#include "core/tokenizer.h"
#include "peers/cli/args.h"
#include "peers/cli/commands.h"
#include "peers/diloco/model_factory.h"

namespace arch::cli {

int cmd_sample(const std::vector<std::string>& argv) {
    Args args("sample", argv,
              "usage: archipelago sample --checkpoint FILE [--tokenizer FILE (default: tokenizer.bin beside it)]\n"
              "                          [--prompt TEXT] [--tokens 200] [--temperature 0.8] [--top-k 40] [--seed 1]\n"
              "                          [--device cpu|cuda|cuda:N]\n");
    if (args.help()) {
        std::fputs(args.usage().c_str(), stdout);
        return 0;
    }
    const std::string ckpt = args.str("checkpoint", "");
    if (ckpt.empty()) throw Error("sample: give a --checkpoint\n" + args.usage());
    const std::string dir = ckpt.find('/') == std::string::npos ? "." : ckpt.substr(0, ckpt.find_last_of('/'));
    const std::string tokenizer_path = args.str("tokenizer", dir + "/tokenizer.bin");
    const std::string prompt = args.str("prompt", "");
    SamplingConfig sc;
    sc.max_new_tokens = args.integer("tokens", 200);
    sc.temperature = static_cast<float>(args.real("temperature", 0.8));
    sc.top_k = args.integer("top-k", 40);
    sc.seed = static_cast<uint64_t>(args.integer("seed", 1));
    const std::string device = args.str("device", "cpu");
    args.finish();
    if (sc.max_new_tokens <= 0) throw Error("sample: --tokens must be positive");

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
    return 0;
}

}  // namespace arch::cli
