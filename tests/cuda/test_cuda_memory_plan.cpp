// tests/cuda/test_cuda_memory_plan.cpp: core/memory_plan.h against what the bf16 CUDA model
// allocates (its memory(): bf16 weights, fp32 master/grads/m/v, activations and workspace as
// allocated), for the tiny and llama-tiny presets with both attention kernels, each category within
// 10%. Runs on a GPU and emulated on the CPU (one forward per case: the allocations are made when
// the first batch arrives). A ZeRO-3 rank (kernels/cuda/cuda_shards.h) is checked the same way,
// its gathered units against the plan's comm buffers, after one forward and backward.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "core/memory_plan.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_model.h"
#ifdef ARCH_CUDA_EMULATED
#include "kernels/cpu/cpu_collective.h"
#elif defined(ARCH_HAVE_NCCL)
#include "kernels/cuda/nccl_collective.h"
#endif

using namespace arch;
using cuda::AttentionKind;

TEST_CASE("plan matches the CUDA model's own allocations", "[cuda][plan]") {
    const int B = 2, T = 64;
    std::printf("\n%-36s %-12s %12s %12s %9s\n", "engine (cuda, bf16)", "category", "plan",
                "measured", "plan/meas");
    for (const char* preset : {"tiny", "llama-tiny"})
        for (AttentionKind kind : {AttentionKind::fused, AttentionKind::unfused}) {
            const ModelConfig c = model_preset(preset);
            cuda::CudaModelOptions options;
            options.attention = kind;
            auto model = cuda::make_cuda_model(c, options);
            Rng rng(3);
            std::vector<int> in(static_cast<std::size_t>(B) * T), tg(in.size());
            for (std::size_t i = 0; i < in.size(); ++i) {
                in[i] = static_cast<int>(rng.below(static_cast<uint64_t>(c.vocab_size)));
                tg[i] = static_cast<int>(rng.below(static_cast<uint64_t>(c.vocab_size)));
            }
            model->forward(in.data(), tg.data(), B, T);
            const DeviceMemory m = model->memory();
            PlanRequest q;
            q.model = c;
            q.device = PlanDevice::cuda;
            q.B = B;
            q.T = T;
            q.fused_attention = kind == AttentionKind::fused;
            const DeviceBytes p = plan_memory(q).device;
            const std::string what = std::string(preset) +
                                     (q.fused_attention ? " fused" : " unfused") + " B" +
                                     std::to_string(B) + " T" + std::to_string(T);
            const std::pair<const char*, std::pair<std::size_t, std::size_t>> cats[] = {
                {"params", {p.params, m.params_bytes}},
                {"grads", {p.grads, m.grads_bytes}},
                {"optimizer", {p.optimizer, m.optimizer_bytes}},
                {"activations", {p.activations, m.activations_bytes}},
                {"workspace", {p.workspace, m.workspace_bytes}},
            };
            for (const auto& [name, pm] : cats) {
                const auto [planned, measured] = pm;
                std::printf("%-36s %-12s %12s %12s %9.3f\n", what.c_str(), name,
                            format_bytes(planned).c_str(), format_bytes(measured).c_str(),
                            static_cast<double>(planned) / static_cast<double>(measured));
                INFO(what << " " << name << ": plan " << planned << " bytes, engine " << measured);
                CHECK(std::abs(static_cast<double>(planned) / static_cast<double>(measured) -
                               1.0) <= 0.10);
            }
        }
}

TEST_CASE("plan matches a ZeRO-3 rank's own allocations on GPUs", "[cuda][plan][zero3]") {
    const int B = 2, T = 64;
#ifdef ARCH_CUDA_EMULATED
    const int N = 2;
    auto collectives = make_cpu_collectives(N);
#elif defined(ARCH_HAVE_NCCL)
    const int N = cuda::device_count() >= 2 ? 2 : 1;
    std::vector<int> gpus;
    for (int r = 0; r < N; ++r) gpus.push_back(r);
    auto collectives = make_nccl_collectives(gpus);
#else
    std::printf("SKIPPED: this build has no NCCL, so no ZeRO-3 island of GPUs\n");
    return;
#endif
#if defined(ARCH_CUDA_EMULATED) || defined(ARCH_HAVE_NCCL)
    for (const char* preset : {"tiny", "llama-tiny"}) {
        const ModelConfig c = model_preset(preset);
        std::vector<std::unique_ptr<cuda::CudaModel>> ranks;
        for (int r = 0; r < N; ++r) {
            cuda::CudaModelOptions options;
#ifndef ARCH_CUDA_EMULATED
            options.device = r;
#endif
            options.zero3 = collectives[r].get();
            ranks.push_back(cuda::make_cuda_model(c, options));
        }
        Rng rng(3);
        std::vector<int> in(static_cast<std::size_t>(B) * T), tg(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) {
            in[i] = static_cast<int>(rng.below(static_cast<uint64_t>(c.vocab_size)));
            tg[i] = static_cast<int>(rng.below(static_cast<uint64_t>(c.vocab_size)));
        }
        std::vector<std::thread> threads;
        for (int r = 0; r < N; ++r)
            threads.emplace_back([&, r] {
                ranks[r]->forward(in.data(), tg.data(), B, T);
                ranks[r]->backward(1.0f);
                ranks[r]->reduce_grads(*collectives[r]);
            });
        for (auto& t : threads) t.join();
        PlanRequest q;
        q.model = c;
        q.device = PlanDevice::cuda;
        q.devices = N;
        q.parallel = Parallel::zero3;
        q.B = B;
        q.T = T;
        const DeviceBytes p = plan_memory(q).device;
        for (int r = 0; r < N; ++r) {
            const DeviceMemory m = ranks[r]->memory();
            const std::string what = std::string(preset) + " zero3 rank " + std::to_string(r) + " of " +
                                     std::to_string(N) + " B" + std::to_string(B) + " T" + std::to_string(T);
            const std::pair<const char*, std::pair<std::size_t, std::size_t>> cats[] = {
                {"params", {p.params, m.params_bytes}},
                {"grads", {p.grads, m.grads_bytes}},
                {"optimizer", {p.optimizer, m.optimizer_bytes}},
                {"activations", {p.activations, m.activations_bytes}},
                {"workspace", {p.workspace, m.workspace_bytes}},
                {"comm", {p.comm, m.gathered_bytes}},
            };
            for (const auto& [name, pm] : cats) {
                const auto [planned, measured] = pm;
                std::printf("%-36s %-12s %12s %12s %9.3f\n", what.c_str(), name, format_bytes(planned).c_str(),
                            format_bytes(measured).c_str(),
                            static_cast<double>(planned) / static_cast<double>(measured));
                INFO(what << " " << name << ": plan " << planned << " bytes, engine " << measured);
                CHECK(std::abs(static_cast<double>(planned) / static_cast<double>(measured) - 1.0) <= 0.10);
            }
        }
    }
#endif
}
