// bench/bench_island.cpp: an island's throughput and traffic: tokens/s of training steps on 1 and 2
// CPU devices (threads) in DDP and ZeRO-3, with recompute, bytes each device sends per step, and per-device memory by
// category, as the engine allocated it (core/device_memory.h; `archipelago plan` predicts the same).
// Where GPUs and NCCL are present, the same on 1 and all GPUs for every mode of docs/island.md and
// docs/plan.md: DDP, ZeRO-3, recompute attention / block, offload optimizer; otherwise why not.
// Usage: bench_island [--json] [--steps N] [--config tiny|small|gpt2-124m] [--batch B] [--seq-len T]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "core/island.h"
#include "core/memory_modes.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"
#ifdef ARCH_HAVE_NCCL

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/nccl_collective.h"
#endif

using namespace arch;
using Clock = std::chrono::steady_clock;

namespace {

struct Row {
    std::string device, parallel;
    int devices;
    double tokens_per_s, ms_per_step, bytes_per_step;  // bytes sent by each device per step
    DeviceMemory memory;                                // device 0's
};

double mb(std::size_t bytes) { return static_cast<double>(bytes) / 1e6; }

void print(const Row& r, bool json) {
    if (json) {
        bench::print_row({{"device", r.device},
                          {"devices", r.devices},
                          {"parallel", r.parallel},
                          {"tokens_per_s", bench::rounded(r.tokens_per_s, 1)},
                          {"ms_per_step", bench::rounded(r.ms_per_step, 2)},
                          {"bytes_per_step", std::llround(r.bytes_per_step)},
                          {"state_mb_per_device", bench::rounded(mb(r.memory.state_bytes()), 3)},
                          {"params_mb", bench::rounded(mb(r.memory.params_bytes), 3)},
                          {"grads_mb", bench::rounded(mb(r.memory.grads_bytes), 3)},
                          {"optimizer_mb", bench::rounded(mb(r.memory.optimizer_bytes), 3)},
                          {"comm_mb", bench::rounded(mb(r.memory.gathered_bytes), 3)},
                          {"activations_mb", bench::rounded(mb(r.memory.activations_bytes), 3)},
                          {"workspace_mb", bench::rounded(mb(r.memory.workspace_bytes), 3)}});
    } else {
        const DeviceMemory& m = r.memory;
        std::printf("%-6s %7d %-18s %12.0f %10.2f %14.0f %10.3f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", r.device.c_str(),
                    r.devices, r.parallel.c_str(), r.tokens_per_s, r.ms_per_step, r.bytes_per_step, mb(m.state_bytes()),
                    mb(m.params_bytes), mb(m.grads_bytes), mb(m.optimizer_bytes), mb(m.gathered_bytes),
                    mb(m.activations_bytes), mb(m.workspace_bytes));
        std::fflush(stdout);
    }
}

// Where the GPU rows would be: one JSON row {"device":"gpu","skipped":why}, or a line of the table.
void print_gpu_skipped(const std::string& why, bool json) {
    if (json) bench::print_row({{"device", "gpu"}, {"skipped", why}});
    else std::printf("gpu rows SKIPPED: %s\n", why.c_str());
}

// "ddp", "zero3+rc:block", "ddp+offload": the mode column.
std::string mode_name(Parallel p, Recompute recompute, Offload offload) {
    std::string mode = parallel_name(p);
    if (recompute != Recompute::none) mode += std::string("+rc:") + recompute_name(recompute);
    if (offload != Offload::none) mode += "+offload";
    return mode;
}

Row run_cpu(const ModelConfig& mc, const TrainConfig& t, Parallel p, int devices, Recompute recompute, int steps) {
    std::vector<std::unique_ptr<Backend>> backends;
    for (int r = 0; r < devices; ++r) backends.push_back(make_cpu_backend());
    Island island(mc, t, p, std::move(backends), make_cpu_collectives(devices), recompute);
    island.init_weights(1);
    island.step();  // warm-up: first touch, oneDNN kernel choice, the ZeRO-3 buffer pool
    const std::uint64_t bytes0 = island.bytes_sent(0);
    const auto t0 = Clock::now();
    for (int s = 0; s < steps; ++s) island.step();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const DeviceMemory m = island.memory()[0];
    const double tokens = static_cast<double>(t.B) * t.T * t.grad_accum * devices * steps;
    return {"cpu", mode_name(p, recompute, Offload::none), devices, tokens / seconds, seconds / steps * 1e3,
            static_cast<double>(island.bytes_sent(0) - bytes0) / steps, m};
}

#ifdef ARCH_HAVE_NCCL
// A GPU island in one mode: whole bf16 models over NCCL (DDP with the all-reduce in backward, or
// ZeRO-3 shards), with recompute and offload as asked. Timed like the CPU rows.
Row run_gpu(const ModelConfig& mc, const TrainConfig& t, Parallel p, int devices, Recompute recompute,
            Offload offload, int steps) {
    std::vector<int> gpus;
    for (int r = 0; r < devices; ++r) gpus.push_back(r);
    auto collectives = make_nccl_collectives(gpus);
    std::vector<std::unique_ptr<Model>> models;
    for (int r = 0; r < devices; ++r) {
        cuda::CudaModelOptions o;
        o.device = r;
        o.recompute = recompute;
        o.offload = offload;
        (p == Parallel::zero3 ? o.zero3 : o.ddp) = collectives[r].get();
        models.push_back(cuda::make_cuda_model(mc, o));
    }
    Island island(mc, t, std::move(models), std::move(collectives), p);
    island.init_weights(1);
    island.step();  // warm-up: cuBLASLt's choices, the ZeRO-3 pool, pinned staging
    const std::uint64_t bytes0 = island.bytes_sent(0);
    const auto t0 = Clock::now();
    for (int s = 0; s < steps; ++s) island.step();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const std::string mode = mode_name(p, recompute, offload);
    const double tokens = static_cast<double>(t.B) * t.T * t.grad_accum * devices * steps;
    return {"gpu", mode, devices, tokens / seconds, seconds / steps * 1e3,
            static_cast<double>(island.bytes_sent(0) - bytes0) / steps, island.memory()[0]};
}
#endif

// Every row: CPU islands of 1 and 2 devices on a random-token shard, then the NCCL rows or why not.
void run(const std::string& config, int B, int T, int steps, bool json) {
    const ModelConfig mc = model_preset(config, 4096);
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("bench_island_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    {
        Rng rng(3);
        std::vector<uint16_t> tokens(static_cast<std::size_t>(B) * T * 8 + 1);
        for (auto& x : tokens) x = static_cast<uint16_t>(rng.below(mc.vocab_size));
        write_token_shard((dir / "train_000000.bin").string(), tokens);
    }
    TrainConfig t;
    t.B = B;
    t.T = T;
    t.steps = steps + 1;
    t.order = DataOrder::sequential;
    t.train_pattern = (dir / "train_000000.bin").string();

    if (!json) {
        std::printf("island step, %s, B=%d T=%d per device, %d steps; bytes = sent by each device per step (ring)\n",
                    describe(mc).c_str(), B, T, steps);
        std::printf("memory per device in MB: state = params + grads + optimizer; comm = ZeRO-3's gathered units\n");
        std::printf("%-6s %7s %-18s %12s %10s %14s %10s %8s %8s %8s %8s %8s %8s\n", "device", "devices", "mode", "tokens/s",
                    "ms/step", "bytes/step", "state MB", "params", "grads", "optim", "comm", "activ", "work");
    }
    print(run_cpu(mc, t, Parallel::ddp, 1, Recompute::none, steps), json);
    for (Parallel p : {Parallel::ddp, Parallel::zero3}) print(run_cpu(mc, t, p, 2, Recompute::none, steps), json);
    print(run_cpu(mc, t, Parallel::ddp, 2, Recompute::attention, steps), json);
    for (Parallel p : {Parallel::ddp, Parallel::zero3}) print(run_cpu(mc, t, p, 2, Recompute::block, steps), json);
    if (!json) std::printf("cpu rows: no offload (a CPU device's optimizer state is in RAM already)\n");

#ifdef ARCH_HAVE_NCCL
    const std::string why = cuda::no_device_reason();
    if (why.empty()) {
        const int n = cuda::device_count();
        struct Mode {
            Parallel parallel;
            Recompute recompute;
            Offload offload;
        };
        const Mode modes[] = {{Parallel::ddp, Recompute::none, Offload::none},
                              {Parallel::zero3, Recompute::none, Offload::none},
                              {Parallel::ddp, Recompute::attention, Offload::none},
                              {Parallel::ddp, Recompute::block, Offload::none},
                              {Parallel::zero3, Recompute::block, Offload::none},
                              {Parallel::ddp, Recompute::none, Offload::optimizer}};
        for (int devices : n > 1 ? std::vector<int>{1, n} : std::vector<int>{1})
            for (const Mode& m : modes) print(run_gpu(mc, t, m.parallel, devices, m.recompute, m.offload, steps), json);
    } else {
        print_gpu_skipped(why, json);
    }
#else
    print_gpu_skipped("built without CUDA/NCCL", json);
#endif
    std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_island: tokens/s, bytes sent per step and memory of an island's DDP and ZeRO-3 steps"};
    app.option_defaults()->always_capture_default();
    bool json = false;
    int steps = 5, B = 4, T = 64;
    std::string config = "tiny";
    app.add_flag("--json", json, "one JSON object per row instead of the table");
    app.add_option("--steps", steps, "timed steps per row (after one warm-up step)")->check(bench::at_least_one());
    app.add_option("--config", config, "model config: tiny, small, gpt2-124m");
    app.add_option("--batch", B, "batch size B per device");
    app.add_option("--seq-len", T, "sequence length T");
    return bench::run_main(app, argc, argv, [&] { run(config, B, T, steps, json); });
}
