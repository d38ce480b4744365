// peers/diloco/model_factory.h: the Model, Island or InnerLoop for a device string, so the CLI, the
// peer daemon and the benches choose CPU or GPU (and one device or several) the same way: "cpu", "cuda" (= "cuda:0") or "cuda:N". A GPU device goes
// to the program's GPU backend (gpu_backend.h), where it links one.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/inner_loop.h"
#include "core/island.h"
#include "core/model.h"
#include "peers/diloco/gpu_backend.h"

namespace arch::diloco {

struct DeviceChoice {
    bool cuda = false;
    int index = 0;
};

// Throws arch::Error with the accepted forms for anything else, and for "cuda" in a program without
// a GPU backend.
DeviceChoice parse_device(const std::string& device);

// Throws arch::Error for options the device cannot take (make_model and make_island check too).
void check_device_options(const std::string& device, const DeviceOptions& options);

std::unique_ptr<Model> make_model(const ModelConfig& config, const std::string& device,
                                  const DeviceOptions& options = {});

// An island of `devices` devices: CPU threads (DDP or ZeRO-3), or the GPUs cuda:K .. cuda:K+N-1 for
// device "cuda:K" (DDP or ZeRO-3 over NCCL).
std::unique_ptr<Island> make_island(const ModelConfig& config, const TrainConfig& train, int devices,
                                   Parallel parallel, const std::string& device,
                                   const DeviceOptions& options = {});

// The inner loop of an island of `devices` devices: one device is a Trainer of make_model's model,
// several are make_island's Island. The one place that chooses between them; throws for an inner
// optimizer that runs on one device only (Muon) on several.
std::unique_ptr<InnerLoop> make_inner_loop(const ModelConfig& config, const TrainConfig& train, int devices,
                                           Parallel parallel, const std::string& device,
                                           const DeviceOptions& options = {});

// Δ = theta - θ_model encoded on the model's GPU with the codec `spec` when both allow it (a CUDA
// model and an int8/int4/fp4 spec without error feedback); nullopt means: encode on the host.
std::optional<std::vector<std::byte>> encode_delta_on_device(Model& model, std::span<const float> theta,
                                                             const std::string& spec);
// The same for an island: a ZeRO-3 island of GPUs forms and encodes Δ per shard on its devices
// (kernels/cuda/island_codec.h) without gathering θ_i; nullopt: gather and encode on the host.
std::optional<std::vector<std::byte>> encode_delta_on_island(Island& island, std::span<const float> theta,
                                                             const std::string& spec);

}  // namespace arch::diloco
