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
#include "kernels/cuda/cuda_model.h"
#include "tests/cuda/island_fixture.h"

using namespace arch;
using cuda::AttentionKind;

namespace {

// Every category, plan against the engine, printed and within 10%.
void compare(const std::string& what, const DeviceBytes& p, const DeviceMemory& m, bool comm) {
    std::vector<std::pair<const char*, std::pair<std::size_t, std::size_t>>> cats = {
        {"params", {p.params, m.params_bytes}},
        {"grads", {p.grads, m.grads_bytes}},
        {"optimizer", {p.optimizer, m.optimizer_bytes}},
        {"activations", {p.activations, m.activations_bytes}},
        {"workspace", {p.workspace, m.workspace_bytes}},
    };
    if (comm) cats.push_back({"comm", {p.comm, m.gathered_bytes}});
    for (const auto& [name, pm] : cats) {
        const auto [planned, measured] = pm;
        std::printf("%-36s %-12s %12s %12s %9.3f\n", what.c_str(), name, format_bytes(planned).c_str(),
                    format_bytes(measured).c_str(), static_cast<double>(planned) / static_cast<double>(measured));
        INFO(what << " " << name << ": plan " << planned << " bytes, engine " << measured);
        CHECK(std::abs(static_cast<double>(planned) / static_cast<double>(measured) - 1.0) <= 0.10);
    }
}

}  // namespace

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
            compare(what, p, m, false);
        }
}

TEST_CASE("plan matches a ZeRO-3 rank's own allocations on GPUs", "[cuda][plan][zero3]") {
    const int B = 2, T = 64;
#if ARCH_TEST_GPU_ISLANDS
    const int N = cuda_test::usable_gpus() >= 2 ? 2 : 1;
    auto collectives = cuda_test::island_collectives(N);
    for (const char* preset : {"tiny", "llama-tiny"}) {
        const ModelConfig c = model_preset(preset);
        std::vector<std::unique_ptr<cuda::CudaModel>> ranks;
        for (int r = 0; r < N; ++r)
            ranks.push_back(cuda::make_cuda_model(c, cuda_test::rank_options(r, *collectives[r], Parallel::zero3)));
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
            compare(what, p, m, true);
        }
    }
#else
    std::printf("SKIPPED: this build has no NCCL, so no ZeRO-3 island of GPUs\n");
#endif
}
