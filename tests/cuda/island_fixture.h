// tests/cuda/island_fixture.h: what the GPU island tests share: a small GPT-2 and Llama, a learnable
// token shard with a TrainConfig over it, islands of whole CUDA models (DDP or ZeRO-3, with offload)
// over NCCL, or over the CPU collective under the emulator (where the "GPUs" share host memory), and
// the relative L2 distance their tolerances use. ARCH_TEST_GPU_ISLANDS says whether islands of
// several GPUs can be made in this build.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/island.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/core/temp_dir.h"
#ifdef ARCH_CUDA_EMULATED
#include "kernels/cpu/cpu_collective.h"
#define ARCH_TEST_GPU_ISLANDS 1
#elif defined(ARCH_HAVE_NCCL)
#include "kernels/cuda/nccl_collective.h"
#define ARCH_TEST_GPU_ISLANDS 1
#else
#define ARCH_TEST_GPU_ISLANDS 0
#endif

namespace cuda_test {

inline arch::ModelConfig island_model() {
    arch::ModelConfig c;
    c.max_seq_len = 32;
    c.vocab_size = 200;
    c.padded_vocab_size = arch::pad_vocab(c.vocab_size);
    c.num_layers = 2;
    c.num_heads = 2;
    c.channels = 64;
    return c;
}

// The same size in the Llama family: one KV head for both query heads, SwiGLU F96, untied.
inline arch::ModelConfig island_llama() {
    arch::ModelConfig c = island_model();
    c.family = arch::ModelFamily::llama;
    c.num_kv_heads = 1;
    c.ffn_hidden = 96;
    c.tied_embeddings = false;
    return c;
}

// A repeating pattern with 20% noise, so a few steps visibly learn.
struct TrainData {
    TempDir dir;
    TrainData() {
        arch::Rng rng(3);
        std::vector<uint16_t> tokens(20000);
        for (std::size_t i = 0; i < tokens.size(); ++i)
            tokens[i] = static_cast<uint16_t>(rng.uniform() < 0.2f ? rng.below(200) : (i * 11 + i / 5) % 200);
        arch::write_token_shard(dir.file("train_000000.bin"), tokens);
    }
    arch::TrainConfig config(int grad_accum, int steps = 6) const {
        arch::TrainConfig t;
        t.B = 2;
        t.T = 32;
        t.grad_accum = grad_accum;
        t.steps = steps;
        t.schedule.max_lr = 2e-3f;
        t.schedule.warmup_steps = 1;
        t.schedule.total_steps = steps;
        t.train_pattern = dir.file("train_*.bin");
        return t;
    }
};

inline double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
        n += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(d / n);
}

#if ARCH_TEST_GPU_ISLANDS
// 2 under the emulator; else the GPUs this machine has.
inline int usable_gpus() {
#ifdef ARCH_CUDA_EMULATED
    return 2;
#else
    return arch::cuda::device_count();
#endif
}

// One collective per rank: NCCL over GPUs 0..n-1, or the CPU collective under the emulator.
inline std::vector<std::unique_ptr<arch::Collective>> island_collectives(int n) {
#ifdef ARCH_CUDA_EMULATED
    return arch::make_cpu_collectives(n);
#else
    std::vector<int> gpus;
    for (int r = 0; r < n; ++r) gpus.push_back(r);
    return arch::make_nccl_collectives(gpus);
#endif
}

// Rank r's model options: GPU r (the emulator has one "GPU" for all), DDP or ZeRO-3 over collective.
inline arch::cuda::CudaModelOptions rank_options(int r, arch::Collective& collective, arch::Parallel parallel) {
    arch::cuda::CudaModelOptions o;
#ifndef ARCH_CUDA_EMULATED
    o.device = r;
#endif
    (parallel == arch::Parallel::zero3 ? o.zero3 : o.ddp) = &collective;
    return o;
}

inline std::unique_ptr<arch::Island> gpu_island(const arch::ModelConfig& c, const arch::TrainConfig& t, int n,
                                                arch::Parallel parallel = arch::Parallel::ddp,
                                                arch::Offload offload = arch::Offload::none) {
    auto collectives = island_collectives(n);
    std::vector<std::unique_ptr<arch::Model>> models;
    for (int r = 0; r < n; ++r) {
        arch::cuda::CudaModelOptions o = rank_options(r, *collectives[r], parallel);
        o.offload = offload;
        models.push_back(arch::cuda::make_cuda_model(c, o));
    }
    return std::make_unique<arch::Island>(c, t, std::move(models), std::move(collectives), parallel);
}
#endif

}  // namespace cuda_test
