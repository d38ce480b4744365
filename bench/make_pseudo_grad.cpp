// bench/make_pseudo_grad.cpp: writes a real DiLoCo pseudo-gradient Δ = θ_start − θ_after_H_steps as raw
// little-endian float32, for bench_codecs --pseudo-grad. It trains the engine from a GPT-2 init on the
// bundled corpus (prepared into the user's data directory on first use) for H inner AdamW steps.
// Usage: make_pseudo_grad OUT.f32 [--config gpt2-124m] [--steps 8] [--floats 67108864]
#include <cstdio>
#include <fstream>
#include <string>

#include "bench/bench_cli.h"
#include "core/corpus.h"
#include "core/error.h"
#include "core/tokenizer.h"
#include "core/gpt2.h"
#include "core/trainer.h"
#include "kernels/cpu/cpu_backend.h"

using namespace arch;

int main(int argc, char** argv) {
    CLI::App app{"make_pseudo_grad: writes a DiLoCo pseudo-gradient (raw float32) for bench_codecs --pseudo-grad"};
    app.option_defaults()->always_capture_default();
    std::string out, config_name = "gpt2-124m";
    int steps = 8;
    std::size_t floats = std::size_t{1} << 26;
    app.add_option("OUT.f32", out, "file to write")->required();
    app.add_option("--config", config_name, "model config: tiny, small, gpt2-124m");
    app.add_option("--steps", steps, "inner AdamW steps H")->check(bench::at_least_one());
    app.add_option("--floats", floats, "floats to write (at most the model's parameter count)");
    return bench::run_main(app, argc, argv, [&] {
        const PreparedCorpus corpus = ensure_bundled_corpus();
        const ModelConfig config = model_preset(config_name, Tokenizer::load(corpus.tokenizer_path).vocab_size());
        auto backend = make_cpu_backend();
        GPT2 model(config, *backend);
        model.init_weights(1);
        TrainConfig tc;
        tc.steps = steps;
        tc.schedule.max_lr = 6e-4f;
        tc.schedule.warmup_steps = 0;
        tc.schedule.kind = LrSchedule::Kind::constant;
        tc.train_pattern = corpus.train_pattern;
        Trainer trainer(model, tc);
        std::vector<float> start(model.num_params()), end(model.num_params());
        model.get_params(start);
        for (int s = 0; s < steps; ++s) {
            const StepStats st = trainer.step();
            std::fprintf(stderr, "step %d/%d loss %.4f (%.1f s)\n", st.step, steps, st.loss, st.seconds);
        }
        model.get_params(end);
        if (floats > start.size()) floats = start.size();
        for (std::size_t i = 0; i < floats; ++i) start[i] -= end[i];
        std::ofstream f(out, std::ios::binary);
        f.write(reinterpret_cast<const char*>(start.data()), static_cast<std::streamsize>(floats * sizeof(float)));
        if (!f) throw Error("cannot write '" + out + "'");
        std::fprintf(stderr, "wrote %zu floats of Δ (model %s, %d steps) to %s\n", floats, describe(config).c_str(),
                     steps, out.c_str());
    });
}
