// peers/diloco/gpu_backend_cuda.cpp: the CUDA backend (kernels/cuda) behind diloco::GpuBackend. Built
// as an object library and linked only into the programs that train on GPUs; its static installer
// makes it the program's backend before main(). With ARCH_HAVE_NCCL an island spans several GPUs.
#include <cstdio>

#include "core/error.h"
#include "kernels/cuda/cuda_info.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device_codec.h"
#include "kernels/cuda/island_codec.h"
#include "peers/diloco/gpu_backend.h"
#ifdef ARCH_HAVE_NCCL
#include "kernels/cuda/nccl_collective.h"
#endif

namespace arch::diloco {

namespace {

cuda::CudaModelOptions cuda_options(int gpu, const DeviceOptions& o) {
    cuda::CudaModelOptions options;
    options.device = gpu;
    options.attention = o.attention == "fused" ? cuda::AttentionKind::fused : cuda::AttentionKind::unfused;
    options.recompute = o.recompute;
    options.offload = o.offload;
    return options;
}

class CudaBackend final : public GpuBackend {
public:
    std::unique_ptr<Model> make_model(const ModelConfig& config, int gpu, const DeviceOptions& options) const override {
        return cuda::make_cuda_model(config, cuda_options(gpu, options));
    }

    std::unique_ptr<Island> make_island(const ModelConfig& config, const TrainConfig& train, const std::vector<int>& gpus,
                                        Parallel parallel, const DeviceOptions& device_options) const override {
#ifdef ARCH_HAVE_NCCL
        auto collectives = make_nccl_collectives(gpus);
        std::vector<std::unique_ptr<Model>> models;
        for (std::size_t r = 0; r < gpus.size(); ++r) {
            cuda::CudaModelOptions options = cuda_options(gpus[r], device_options);
            if (parallel == Parallel::zero3) options.zero3 = collectives[r].get();  // each GPU holds its shard
            else options.ddp = collectives[r].get();  // all-reduce each unit as backward leaves it
            models.push_back(cuda::make_cuda_model(config, options));
        }
        return std::make_unique<Island>(config, train, std::move(models), std::move(collectives), parallel);
#else
        throw Error("an island of several GPUs needs NCCL, which was not found when this archipelago was built");
#endif
    }

    std::optional<std::vector<std::byte>> encode_delta(Model& model, std::span<const float> theta,
                                                       const std::string& spec) const override {
        auto* gpu = dynamic_cast<cuda::CudaModel*>(&model);
        if (gpu != nullptr && cuda::device_codec_supports(spec)) return gpu->encode_delta(theta, spec);
        return std::nullopt;
    }

    std::optional<std::vector<std::byte>> encode_delta(Island& island, std::span<const float> theta,
                                                       const std::string& spec) const override {
        return cuda::encode_island_delta(island, theta, spec);
    }

    std::vector<std::string> describe() const override {
        const cuda::Info info = cuda::cuda_info();
        std::vector<std::string> lines = {
            "  cuda   bf16 weights and activations, fp32 master weights and AdamW state, cuBLASLt (--device cuda:N)",
            "         compiled for CUDA architectures " + info.compiled_architectures + "; CUDA runtime " +
                info.runtime_version + ", driver " + (info.driver_version.empty() ? "none" : info.driver_version),
            "devices:",
            "  cpu",
        };
        if (info.devices.empty()) lines.push_back("  (no CUDA device: " + info.problem + ")");
        for (const cuda::DeviceInfo& d : info.devices) {
            char line[320];
            std::snprintf(line, sizeof(line), "  cuda:%d  %s, sm_%d, %.1f GiB, %d SMs at %.2f GHz, bf16 dense peak %.0f TFLOP/s (%s)",
                          d.index, d.name.c_str(), d.sm, static_cast<double>(d.memory_bytes) / 1073741824.0, d.multiprocessors,
                          d.clock_ghz, d.bf16_peak_tflops, d.peak_source.c_str());
            lines.emplace_back(line);
        }
        return lines;
    }
};

const CudaBackend kBackend;
[[maybe_unused]] const bool kInstalled = (install_gpu_backend(kBackend), true);

}  // namespace

}  // namespace arch::diloco
