// peers/diloco/gpu_backend.h: what the run needs from a GPU backend (models, islands, Δ encoded on the
// device, what `archipelago info` says of it), and the one place a program installs one. The CUDA
// backend (gpu_backend_cuda.cpp) installs itself in the programs that link it; every library here is
// built the same with or without it, and a program without one trains on the CPU only.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/island.h"
#include "core/memory_modes.h"
#include "core/model.h"

namespace arch::diloco {

// How a model runs and what it trades for device memory (docs/plan.md). On CPU devices the attention
// kernel is ignored and offload is refused: the CPU engine's optimizer state is in RAM already.
struct DeviceOptions {
    std::string attention = "fused";        // fused | unfused
    Recompute recompute = Recompute::none;  // none | attention | block
    Offload offload = Offload::none;        // none | optimizer
};

class GpuBackend {
public:
    virtual ~GpuBackend() = default;
    virtual std::unique_ptr<Model> make_model(const ModelConfig& config, int gpu, const DeviceOptions& options) const = 0;
    // The GPUs `gpus`, DDP or ZeRO-3 over the backend's collective; throws where it has none.
    virtual std::unique_ptr<Island> make_island(const ModelConfig& config, const TrainConfig& train,
                                                const std::vector<int>& gpus, Parallel parallel,
                                                const DeviceOptions& options) const = 0;
    // Δ = theta - θ encoded on the device with codec `spec` where the model or island and the codec
    // allow it; nullopt: encode on the host.
    virtual std::optional<std::vector<std::byte>> encode_delta(Model& model, std::span<const float> theta,
                                                               const std::string& spec) const = 0;
    virtual std::optional<std::vector<std::byte>> encode_delta(Island& island, std::span<const float> theta,
                                                               const std::string& spec) const = 0;
    // `archipelago info`: the backend's line and its devices (or why there are none).
    virtual std::vector<std::string> describe() const = 0;
};

// The program's GPU backend, or null. Installed before main() by the backend's own object file.
const GpuBackend* gpu_backend();
void install_gpu_backend(const GpuBackend& backend);

}  // namespace arch::diloco
