// bench/train_step.cpp: ms per training step (forward, backward, AdamW) and achieved GFLOP/s of the
// CPU engine, beside oneDNN's sgemm GFLOP/s measured in the same run (the ceiling a step can reach).
// Usage: bench_train_step [--json] [--steps N] [--config NAME,...]
// (default: gpt2-124m, tiny, llama-tiny, smollm-135m; B=4 T=64)
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <chrono>
#include <memory>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "core/adamw.h"
#include "core/model_family.h"
#include "core/transformer.h"
#include "core/rng.h"
#include "kernels/cpu/cpu_backend.h"

using namespace arch;
using Clock = std::chrono::steady_clock;

namespace {

// Matmul and attention FLOPs of one forward pass (backward is twice this). A block's matmuls: qkv,
// the attention projection and the MLP (GPT-2: 4C wide; Llama: gate and up F wide, then down).
double forward_flops(const ModelConfig& c, int B, int T) {
    const double N = static_cast<double>(B) * T, C = c.channels, L = c.num_layers, QKV = qkv_channels(c);
    const double mlp = family_spec(c.family).mlp_flops_per_token(c);
    const double matmuls = 2.0 * N * (C * QKV + C * C + mlp) * L + 2.0 * N * C * c.padded_vocab_size;
    const double attention = 2.0 * 2.0 * B * static_cast<double>(T) * T * C * L;  // q.k and att.v, full T x T
    return matmuls + attention;
}

double sgemm_gflops() {
    const int M = 256, N = 3072, K = 768;  // the shape of GPT-2 124M's fc layer at B*T = 256
    std::vector<float> a(static_cast<std::size_t>(M) * K, 0.5f), b(static_cast<std::size_t>(K) * N, 0.25f),
        c(static_cast<std::size_t>(M) * N);
    dnnl_sgemm('N', 'T', M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, c.data(), N);
    const int reps = 50;
    const auto t0 = Clock::now();
    for (int r = 0; r < reps; ++r) dnnl_sgemm('N', 'T', M, N, K, 1.0f, a.data(), K, b.data(), K, 0.0f, c.data(), N);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    return 2.0 * M * N * K * reps / s / 1e9;
}

struct Row {
    std::string config;
    int B, T;
    double ms_per_step, gflops, forward_ms, backward_ms, optimizer_ms;
};

Row run(const std::string& name, int B, int T, int steps) {
    auto backend = make_cpu_backend();
    ModelConfig config = model_preset(name);
    std::unique_ptr<Transformer> net = make_transformer(config, *backend);
    Transformer& model = *net;
    model.init_weights(1);
    AdamW adamw(model.layout(), *backend);
    AdamWConfig ac;
    Rng rng(7);
    std::vector<int> inputs(static_cast<std::size_t>(B) * T), targets(inputs.size());
    for (auto& x : inputs) x = static_cast<int>(rng.below(config.vocab_size));
    for (auto& x : targets) x = static_cast<int>(rng.below(config.vocab_size));
    double phase[3] = {0, 0, 0};  // forward, backward (with zero_grad), optimizer
    auto one_step = [&] {
        const auto t0 = Clock::now();
        model.forward(inputs.data(), targets.data(), B, T);
        const auto t1 = Clock::now();
        model.zero_grad();
        model.backward();
        const auto t2 = Clock::now();
        adamw.step(model.params(), model.grads(), 1e-4f, ac);
        const auto t3 = Clock::now();
        phase[0] += std::chrono::duration<double>(t1 - t0).count();
        phase[1] += std::chrono::duration<double>(t2 - t1).count();
        phase[2] += std::chrono::duration<double>(t3 - t2).count();
    };
    one_step();  // warm-up: first-touch pages, oneDNN kernel selection
    phase[0] = phase[1] = phase[2] = 0;
    for (int s = 0; s < steps; ++s) one_step();
    const double seconds = (phase[0] + phase[1] + phase[2]) / steps;
    return {name, B, T, seconds * 1e3, 3.0 * forward_flops(config, B, T) / seconds / 1e9,
            phase[0] / steps * 1e3, phase[1] / steps * 1e3, phase[2] / steps * 1e3};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_train_step: ms per CPU training step and GFLOP/s, beside oneDNN sgemm GFLOP/s"};
    app.option_defaults()->always_capture_default();
    bool json = false;
    int steps = 5;
    std::vector<std::string> configs = {"gpt2-124m", "tiny", "llama-tiny", "smollm-135m"};
    app.add_flag("--json", json, "one JSON object per row instead of the table");
    app.add_option("--steps", steps, "timed steps per config (after one warm-up step)")->check(bench::at_least_one());
    app.add_option("--config", configs, "model configs to time (" + model_preset_names() + "), comma-separated")
        ->delimiter(',');
    return bench::run_main(app, argc, argv, [&] {
        const double peak = sgemm_gflops();
        const int threads = omp_get_max_threads();
        if (!json) {
            std::printf("train step, fp32, %d threads; oneDNN sgemm (256x3072x768) %.1f GFLOP/s\n", threads, peak);
            std::printf("%-11s %3s %5s %10s %9s %9s %9s %9s %9s\n", "config", "B", "T", "ms/step", "fwd ms", "bwd ms",
                        "adamw ms", "GFLOP/s", "of sgemm");
        }
        for (const std::string& name : configs) {
            const int B = 4, T = 64;
            const Row r = run(name, B, T, steps);
            if (json) {
                bench::print_row({{"config", r.config},
                                  {"B", r.B},
                                  {"T", r.T},
                                  {"threads", threads},
                                  {"ms_per_step", bench::rounded(r.ms_per_step, 1)},
                                  {"gflops", bench::rounded(r.gflops, 1)},
                                  {"forward_ms", bench::rounded(r.forward_ms, 1)},
                                  {"backward_ms", bench::rounded(r.backward_ms, 1)},
                                  {"optimizer_ms", bench::rounded(r.optimizer_ms, 1)},
                                  {"sgemm_gflops", bench::rounded(peak, 1)}});
            } else {
                std::printf("%-11s %3d %5d %10.1f %9.1f %9.1f %9.1f %9.1f %8.0f%%\n", r.config.c_str(), r.B, r.T,
                            r.ms_per_step, r.forward_ms, r.backward_ms, r.optimizer_ms, r.gflops,
                            100.0 * r.gflops / peak);
                std::fflush(stdout);
            }
        }
    });
}
