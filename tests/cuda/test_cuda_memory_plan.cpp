// tests/cuda/test_cuda_memory_plan.cpp: core/memory_plan.h against what the bf16 CUDA model
// allocates (its memory(): bf16 weights, fp32 master/grads/m/v, activations and workspace as
// allocated), for the tiny and llama-tiny presets with both attention kernels, each category within
// 10%. Runs on a GPU and emulated on the CPU (one forward per case: the allocations are made when
// the first batch arrives).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/memory_plan.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_model.h"

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
