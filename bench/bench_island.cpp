// bench/bench_island.cpp: an island's throughput and traffic: tokens/s of training steps on 1 and 2
// CPU devices (threads) in DDP and ZeRO-3, bytes each device sends per step, and per-device memory by
// category, as the engine allocated it (core/device_memory.h; `archipelago plan` predicts the same).
// Where a GPU and NCCL are present it also times the step's collective pattern on NCCL (there is no
// CUDA Backend yet, so GPU training rows wait for it); otherwise it prints why the GPU rows are skipped.
// Usage: bench_island [--json] [--steps N] [--config tiny|small|gpt2-124m] [--batch B] [--seq-len T]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_cli.h"
#include "core/island.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"
#ifdef ARCH_HAVE_NCCL
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_check.h"
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
        std::printf("%-6s %7d %-6s %12.0f %10.2f %14.0f %10.3f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", r.device.c_str(),
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

Row run_cpu(const ModelConfig& mc, const TrainConfig& t, Parallel p, int devices, int steps) {
    std::vector<std::unique_ptr<Backend>> backends;
    for (int r = 0; r < devices; ++r) backends.push_back(make_cpu_backend());
    Island island(mc, t, p, std::move(backends), make_cpu_collectives(devices));
    island.init_weights(1);
    island.step();  // warm-up: first touch, oneDNN kernel choice, the ZeRO-3 buffer pool
    const std::uint64_t bytes0 = island.bytes_sent(0);
    const auto t0 = Clock::now();
    for (int s = 0; s < steps; ++s) island.step();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const DeviceMemory m = island.memory()[0];
    const double tokens = static_cast<double>(t.B) * t.T * t.grad_accum * devices * steps;
    return {"cpu", parallel_name(p), devices, tokens / seconds, seconds / steps * 1e3,
            static_cast<double>(island.bytes_sent(0) - bytes0) / steps, m};
}

#ifdef ARCH_HAVE_NCCL
// The collectives of one step with one micro-batch: DDP all-reduces every unit; ZeRO-3 all-gathers every
// unit twice (forward, backward) and reduce-scatters it once. Timed on NCCL; no compute.
Row run_nccl_pattern(const ModelConfig& mc, Parallel p, int devices, int steps) {
    std::vector<int> ids(devices);
    for (int r = 0; r < devices; ++r) ids[r] = r;
    auto comms = make_nccl_collectives(ids);
    const ParamLayout layout(mc);
    const int U = num_units(layout);
    std::vector<double> seconds(devices);
    auto device_run = [&](int r) {
        cudaSetDevice(ids[r]);
        float* full = nullptr;
        float* piece = nullptr;
        cudaMalloc(&full, (layout.num_params() + devices * U) * sizeof(float));
        cudaMalloc(&piece, (layout.num_params() / devices + U + 1) * sizeof(float));
        auto one_step = [&] {
            for (int u = 0; u < U; ++u) {
                const std::size_t n = unit_size(layout, u), k = (n + devices - 1) / devices;
                if (p == Parallel::ddp) {
                    comms[r]->all_reduce_sum(full, n);
                } else {
                    comms[r]->all_gather(full, piece, k);
                    comms[r]->all_gather(full, piece, k);
                    comms[r]->reduce_scatter_sum(piece, full, k);
                }
            }
        };
        one_step();
        const auto t0 = Clock::now();
        for (int s = 0; s < steps; ++s) one_step();
        seconds[r] = std::chrono::duration<double>(Clock::now() - t0).count();
        cudaFree(full);
        cudaFree(piece);
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < devices; ++r) threads.emplace_back(device_run, r);
    for (auto& th : threads) th.join();
    const double bytes = static_cast<double>(comms[0]->bytes_sent()) / (steps + 1);
    return {"nccl", std::string(parallel_name(p)) + "*", devices, 0.0, seconds[0] / steps * 1e3, bytes, DeviceMemory{}};
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
        std::printf("%-6s %7s %-6s %12s %10s %14s %10s %8s %8s %8s %8s %8s %8s\n", "device", "devices", "mode", "tokens/s",
                    "ms/step", "bytes/step", "state MB", "params", "grads", "optim", "comm", "activ", "work");
    }
    print(run_cpu(mc, t, Parallel::ddp, 1, steps), json);
    for (Parallel p : {Parallel::ddp, Parallel::zero3}) print(run_cpu(mc, t, p, 2, steps), json);
    std::filesystem::remove_all(dir);

#ifdef ARCH_HAVE_NCCL
    const std::string why = cuda::no_device_reason();
    if (why.empty()) {
        const int n = cuda::device_count();
        for (int devices : n > 1 ? std::vector<int>{1, n} : std::vector<int>{1})
            for (Parallel p : {Parallel::ddp, Parallel::zero3}) print(run_nccl_pattern(mc, p, devices, steps), json);
        if (!json) std::printf("nccl rows (mode*): the step's collectives alone, timed on the GPUs (training throughput on GPUs: bench_gpu_train)\n");
    } else {
        print_gpu_skipped(why, json);
    }
#else
    print_gpu_skipped("built without CUDA/NCCL", json);
#endif
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
