// bench/gpu_train.cpp: training throughput of a GPT-2 or Llama-family model on one GPU (bf16,
// kernels/cuda): ms per step, tokens/s, MFU against the GPU's dense bf16 peak, and peak device
// memory, for the largest batch that fits (tries B = 32, 16, 8, ... at the given T). MFU uses
// llm.c's count: 6 N + 6 L C T FLOPs per token (N = all parameters, padded vocab included; the
// attention term counts the NH query heads, so grouped KV heads do not change it). Tokens are random
// ids (throughput only). With --modes B it then trains the fused model at batch B in each memory mode
// (DDP and ZeRO-3 over NCCL on this one GPU, recompute, offload, and ZeRO-3 with both) and prints
// tokens/s beside the plain model's, and every device memory category against `archipelago plan`.
// Usage: bench_gpu_train [--config gpt2-124m|smollm-135m|...] [--vocab V] [--B 32] [--T 1024]
//                        [--steps 50] [--attention fused|unfused|both] [--modes B] [--json]
// Without a usable GPU it prints "SKIPPED: <reason>" and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_cli.h"
#include "core/error.h"
#include "core/memory_plan.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/cuda_info.h"
#ifdef ARCH_HAVE_NCCL
#include "kernels/cuda/nccl_collective.h"
#endif

using namespace arch;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
    std::string attention;  // or the memory mode's name
    DeviceMemory memory;
    int B = 0, T = 0;
    double ms = 0, tokens_per_s = 0, tflops = 0, mfu = 0, loss_first = 0, loss_last = 0;
    double peak_gib = 0, model_gib = 0;
};

// One row: `steps` training steps of a model made with `options`; with a collective (DDP or ZeRO-3 of
// one rank) the step reduces its gradients over it, as an island does.
Row run(const ModelConfig& config, const cuda::CudaModelOptions& options, Collective* collective,
        const std::string& name, int B, int T, int steps, double peak_tflops) {
    auto model = cuda::make_cuda_model(config, options);
    model->init_weights(1);
    Rng rng(7);
    std::vector<int> inputs(static_cast<std::size_t>(B) * T), targets(inputs.size());
    AdamWConfig ac;
    std::vector<double> ms;
    Row r;
    r.attention = name;
    r.B = B;
    r.T = T;
    for (int s = 0; s < steps; ++s) {
        for (auto& x : inputs) x = static_cast<int>(rng.below(config.vocab_size));
        for (auto& x : targets) x = static_cast<int>(rng.below(config.vocab_size));
        const auto t0 = Clock::now();
        model->zero_grad();
        model->set_last_micro_batch(true);
        const float loss = model->forward(inputs.data(), targets.data(), B, T);
        model->backward();
        if (collective) model->reduce_grads(*collective);
        model->adamw_step(3e-4f, ac);
        cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (s == 0) r.loss_first = loss;
        r.loss_last = loss;
        if (s % 10 == 0 || s == steps - 1)
            std::fprintf(stderr, "  %s B=%d T=%d step %d/%d: %.1f ms, loss %.4f\n", r.attention.c_str(), B, T, s + 1,
                         steps, ms.back(), loss);
    }
    // Median of the steps after the first five (cuBLASLt heuristics, allocation, clocks settle).
    std::vector<double> steady(ms.begin() + std::min<std::size_t>(5, ms.size() - 1), ms.end());
    std::sort(steady.begin(), steady.end());
    r.ms = steady[steady.size() / 2];
    const double tokens = static_cast<double>(B) * T;
    const double flops_per_token =
        6.0 * model->num_params() + 6.0 * config.num_layers * config.channels * static_cast<double>(T);
    r.tokens_per_s = tokens / (r.ms / 1e3);
    r.tflops = flops_per_token * r.tokens_per_s / 1e12;
    r.mfu = peak_tflops > 0 ? r.tflops / peak_tflops : 0;
    std::size_t free_b = 0, total_b = 0;
    cuda::check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    r.peak_gib = (total_b - free_b) / 1073741824.0;
    r.model_gib = model->allocated_bytes() / 1073741824.0;
    r.memory = model->memory();
    return r;
}

// A memory mode: what the model is told, and what the plan is asked for the same.
struct Mode {
    const char* name;
    Parallel parallel;  // ddp with no collective: the plain model
    bool collective;
    Recompute recompute;
    Offload offload;
};

// Every device memory category of one mode: `archipelago plan`'s figure beside the engine's.
void print_memory(const ModelConfig& config, const Mode& mode, const Row& r) {
    PlanRequest q;
    q.model = config;
    q.device = PlanDevice::cuda;
    q.B = r.B;
    q.T = r.T;
    q.parallel = mode.parallel;
    q.recompute = mode.recompute;
    q.offload = mode.offload;
    const DeviceBytes p = plan_device_bytes(q);
    const DeviceMemory& m = r.memory;
    const std::pair<const char*, std::pair<std::size_t, std::size_t>> cats[] = {
        {"params", {p.params, m.params_bytes}},          {"grads", {p.grads, m.grads_bytes}},
        {"optimizer", {p.optimizer, m.optimizer_bytes}}, {"activations", {p.activations, m.activations_bytes}},
        {"workspace", {p.workspace, m.workspace_bytes}}, {"comm", {p.comm, m.gathered_bytes}},
    };
    for (const auto& [name, pm] : cats) {
        const double plan = pm.first / 1048576.0, engine = pm.second / 1048576.0;
        char off[24];
        if (engine > 0) std::snprintf(off, sizeof off, "%+.1f%%", 100.0 * (plan / engine - 1.0));
        else std::snprintf(off, sizeof off, "%s", plan > 0 ? "engine 0" : "-");
        std::printf("  %-22s %-12s %10.1f %10.1f %8s\n", mode.name, name, plan, engine, off);
    }
}

// The fused model at batch B in each memory mode on GPU 0: tokens/s beside the plain model's, and
// the plan's device memory per category against the engine's.
void run_modes(const ModelConfig& config, int B, int T, int steps, double peak_tflops) {
    const Mode modes[] = {
        {"plain", Parallel::ddp, false, Recompute::none, Offload::none},
        {"ddp(1 GPU, NCCL)", Parallel::ddp, true, Recompute::none, Offload::none},
        {"recompute=attention", Parallel::ddp, false, Recompute::attention, Offload::none},
        {"recompute=block", Parallel::ddp, false, Recompute::block, Offload::none},
        {"offload=optimizer", Parallel::ddp, false, Recompute::none, Offload::optimizer},
        {"zero3(1 GPU, NCCL)", Parallel::zero3, true, Recompute::none, Offload::none},
        {"zero3+block+offload", Parallel::zero3, true, Recompute::block, Offload::optimizer},
    };
    std::vector<std::pair<Mode, Row>> rows;
    for (const Mode& mode : modes) {
        std::unique_ptr<Collective> collective;
        if (mode.collective) {
#ifdef ARCH_HAVE_NCCL
            collective = std::move(make_nccl_collectives({0}).at(0));
#else
            std::printf("  %s: skipped, this build has no NCCL\n", mode.name);
            continue;
#endif
        }
        cuda::CudaModelOptions options;
        options.recompute = mode.recompute;
        options.offload = mode.offload;
        if (collective) (mode.parallel == Parallel::zero3 ? options.zero3 : options.ddp) = collective.get();
        try {
            rows.emplace_back(mode, run(config, options, collective.get(), mode.name, B, T, steps, peak_tflops));
        } catch (const Error& e) {
            cudaGetLastError();
            std::printf("  %s: failed (%s)\n", mode.name, e.what());
        }
    }
    std::printf("\nmemory modes, fused attention, B=%d T=%d: tokens/s against the plain model\n", B, T);
    std::printf("%-22s %9s %11s %8s %6s %9s\n", "mode", "ms/step", "tokens/s", "vs plain", "MFU", "peak GiB");
    const double plain = rows.empty() ? 0 : rows.front().second.tokens_per_s;
    for (const auto& [mode, r] : rows)
        std::printf("%-22s %9.1f %11.0f %7.2fx %5.1f%% %9.1f\n", mode.name, r.ms, r.tokens_per_s,
                    plain > 0 ? r.tokens_per_s / plain : 0.0, 100 * r.mfu, r.peak_gib);
    std::printf("\ndevice memory per category, MiB: archipelago plan against the engine's own allocations\n");
    std::printf("  %-22s %-12s %10s %10s %8s\n", "mode", "category", "plan", "engine", "plan off");
    for (const auto& [mode, r] : rows) print_memory(config, mode, r);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_gpu_train: training ms/step, tokens/s, MFU and peak memory on one GPU"};
    app.option_defaults()->always_capture_default();
    std::string config_name = "gpt2-124m", attention = "both";
    int vocab = 0, B = 32, T = 1024, steps = 50, modes_B = 0;
    bool json = false;
    app.add_option("--config", config_name,
                   "model config: " + model_preset_names());
    app.add_option("--vocab", vocab, "vocabulary size V (padded to Vp by the model); 0: the preset's")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--B", B, "largest batch to try; halved until it fits")->check(bench::at_least_one());
    app.add_option("--T", T, "sequence length")->check(bench::at_least_one());
    app.add_option("--steps", steps, "steps per row; the median after the first five is reported")
        ->check(bench::at_least_one());
    app.add_option("--attention", attention, "attention kernels to time")
        ->check(CLI::IsMember({"fused", "unfused", "both"}));
    app.add_option("--modes", modes_B, "then train the fused model at this batch in every memory mode (0: not)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--json", json, "also print one JSON object per row after the table");
    return bench::run_main(app, argc, argv, [&] {
        const std::string reason = cuda::no_device_reason();
        if (!reason.empty()) {
            std::printf("SKIPPED: %s\n", reason.c_str());
            return;
        }
        const cuda::Info info = cuda::cuda_info();
        const cuda::DeviceInfo& dev = info.devices.at(0);
        ModelConfig config = model_preset(config_name, vocab);
        config.max_seq_len = std::max(config.max_seq_len, T);
        std::printf("device cuda:0 %s, sm_%d, %.0f GiB; bf16 dense peak %.1f TFLOP/s (%s)\n", dev.name.c_str(), dev.sm,
                    dev.memory_bytes / 1073741824.0, dev.bf16_peak_tflops, dev.peak_source.c_str());
        std::printf("model %s (V=%d, Vp=%d), %d steps per row\n", describe(config).c_str(), config.vocab_size,
                    config.padded_vocab_size, steps);
        std::vector<cuda::AttentionKind> kinds;
        if (attention == "fused" || attention == "both") kinds.push_back(cuda::AttentionKind::fused);
        if (attention == "unfused" || attention == "both") kinds.push_back(cuda::AttentionKind::unfused);
        std::vector<Row> rows;
        for (auto kind : kinds) {
            for (int b = B; b >= 1; b /= 2) {  // the largest batch that fits
                try {
                    cuda::CudaModelOptions options;
                    options.attention = kind;
                    rows.push_back(run(config, options, nullptr,
                                       kind == cuda::AttentionKind::fused ? "fused" : "unfused", b, T, steps,
                                       dev.bf16_peak_tflops));
                    break;
                } catch (const Error& e) {
                    cudaGetLastError();
                    std::fprintf(stderr, "  B=%d T=%d does not fit or failed (%s); halving B\n", b, T, e.what());
                }
            }
        }
        std::printf("%-9s %4s %5s %9s %11s %8s %6s %9s %9s %10s %10s\n", "attention", "B", "T", "ms/step", "tokens/s",
                    "TFLOP/s", "MFU", "peak GiB", "model GiB", "loss 1st", "loss last");
        for (const Row& r : rows)
            std::printf("%-9s %4d %5d %9.1f %11.0f %8.1f %5.1f%% %9.1f %9.1f %10.4f %10.4f\n", r.attention.c_str(), r.B,
                        r.T, r.ms, r.tokens_per_s, r.tflops, 100 * r.mfu, r.peak_gib, r.model_gib, r.loss_first,
                        r.loss_last);
        if (json)
            for (const Row& r : rows)
                bench::print_row({{"config", config_name},
                                  {"attention", r.attention},
                                  {"B", r.B},
                                  {"T", r.T},
                                  {"ms_per_step", bench::rounded(r.ms, 3)},
                                  {"tokens_per_s", bench::rounded(r.tokens_per_s, 1)},
                                  {"tflops", bench::rounded(r.tflops, 2)},
                                  {"mfu", bench::rounded(r.mfu, 4)},
                                  {"peak_gib", bench::rounded(r.peak_gib, 2)}});
        if (modes_B > 0) run_modes(config, modes_B, T, std::max(steps / 2, 10), dev.bf16_peak_tflops);
    });
}
