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

#include "core/memory_modes.h"
#include "core/model.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device_codec.h"

namespace arch::cuda {

struct CudaModelOptions {
    int device = 0;
    AttentionKind attention = AttentionKind::fused;
    uint64_t rounding_seed =
        0x5eed;  // stochastic rounding of the bf16 weights after each AdamW step
    // Set when the model is one rank of a ZeRO-3 island (cuda_shards.h): weights, gradients and
    // optimizer state then hold only this rank's shard, gathered unit by unit over this collective
    // (which must outlive the model), and get_params / get_grads / get_adamw_state / adamw_step are
    // collectives every rank calls.
    Collective* zero3 = nullptr;
    // Set when the model is one rank of a DDP island (cuda_ddp.h): on the last micro-batch of a step
    // (Model::set_last_micro_batch) each unit's gradients are all-reduced over this collective as soon
    // as backward leaves the unit; reduce_grads then only waits.
    Collective* ddp = nullptr;
    // Activation recomputation (core/memory_modes.h): attention keeps no attention output or
    // P / log-sum-exp per layer, block keeps only each block's input; backward recomputes them with
    // the same kernels, so losses and gradients are bit for bit those without recompute.
    Recompute recompute = Recompute::none;
    // Optimizer offload (host_adamw.h): fp32 master weights, m and v in pinned host memory and the
    // AdamW step on the CPU; the GPU keeps the bf16 weights and fp32 gradients (of its shard, with zero3).
    Offload offload = Offload::none;
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
    // A ZeRO-3 rank (options.zero3): Δ formed and quantized on its own shard; a collective every
    // rank calls. island_codec.h joins the parts into the wire bytes.
    virtual ShardPayload encode_shard_delta(std::span<const float> theta, const std::string& spec) = 0;
};

// The config's family (GPT-2 or Llama) on cuda:options.device. Throws arch::Error when the device
// does not exist or the model cannot be placed on it.
std::unique_ptr<CudaModel> make_cuda_model(const ModelConfig& config,
                                           const CudaModelOptions& options = {});

}  // namespace arch::cuda
