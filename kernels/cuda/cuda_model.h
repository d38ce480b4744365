// kernels/cuda/cuda_model.h: GPT-2 and the Llama family on one NVIDIA GPU in bf16 with fp32 master
// weights, gradients and AdamW state: the fast implementations of core/model.h (the CPU GPT2 and
// Llama are their references). Parameters cross this interface in ParamLayout's fp32 order, so
// checkpoints, run states and pseudo-gradients do not care which device trained. Plain C++ header:
// callers need no nvcc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/model.h"
#include "kernels/cuda/attention.h"

namespace arch::cuda {

struct CudaModelOptions {
    int device = 0;
    AttentionKind attention = AttentionKind::fused;
    uint64_t rounding_seed =
        0x5eed;  // stochastic rounding of the bf16 weights after each AdamW step
};

// A model on a GPU; also exposes its device buffers for device-side pseudo-gradient encoding.
class CudaModel : public Model {
  public:
    // Peak device memory the model has allocated so far (weights, optimizer, activations, scratch).
    virtual std::size_t allocated_bytes() const = 0;
    // Δ = theta - θ_i on the device, encoded there with a device codec spec (device_codec.h) and
    // copied back as the wire bytes the CPU codec would give.
    virtual std::vector<std::byte> encode_delta(std::span<const float> theta,
                                                const std::string& spec) = 0;
};

// The config's family (GPT-2 or Llama) on cuda:options.device. Throws arch::Error when the device
// does not exist or the model cannot be placed on it.
std::unique_ptr<CudaModel> make_cuda_model(const ModelConfig& config,
                                           const CudaModelOptions& options = {});

}  // namespace arch::cuda
