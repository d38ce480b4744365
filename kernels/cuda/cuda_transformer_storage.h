// kernels/cuda/cuda_transformer_storage.h: where a CudaTransformer's state lives, behind one interface
// chosen once when the model is made: a full replica on this GPU (bf16 weights, fp32 gradients,
// master weights, m and v, or those three in pinned host memory with offload; DDP's per-unit
// all-reduce when it is one rank of a DDP island), or one rank's ZeRO-3 shard (cuda_shards.h).
// The model asks it for weights and gradients by flat ParamLayout offset, brackets units with
// enter/leave, and hands it every state transfer and the optimizer step. Internal to kernels/cuda.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/adamw.h"
#include "core/collective.h"
#include "core/device_memory.h"
#include "core/param_layout.h"
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device_codec.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

// 256-byte aligned slices: what CudaTransformer's device allocations take for `bytes`.
inline std::size_t device_alloc_bytes(std::size_t bytes) { return (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256; }

class CudaStorage {
  public:
    virtual ~CudaStorage() = default;
    virtual bool sharded() const = 0;  // ZeRO-3: the whole-vector gathers are collectives every rank calls

    // ---- the passes (the model's stream) ----
    virtual void begin_pass(bool backward) = 0;
    virtual void enter(int unit) = 0;  // before a unit's (a block's, or the globals') launches
    virtual void leave(int unit) = 0;  // after them
    // The bf16 weight and the fp32 gradient at a flat ParamLayout offset (of an entered unit).
    virtual const bf16* weights(std::size_t offset) = 0;
    virtual float* grads(std::size_t offset) = 0;
    virtual void zero_grads() = 0;
    virtual void set_last_micro_batch(bool last) {}  // DDP: the step's last backward reduces each unit
    virtual void reduce_grads(Collective& collective) = 0;
    virtual int ddp_reduces_queued() const { return 0; }

    // ---- state: whole host vectors (a sharded storage gathers; `full` may then be empty on ranks
    // that need no result) ----
    virtual void set_params(std::span<const float> full) = 0;
    virtual void get_params(std::span<float> full) = 0;
    virtual void get_grads(std::span<float> full) = 0;
    virtual void get_adamw_state(std::span<float> m, std::span<float> v) = 0;
    virtual void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) = 0;
    // Slices, local (no collective): the parts this storage holds of [offset, offset + out.size()) of
    // the master weights, m or v (all of it for a replica; the rest of `out` is left as it is); and m
    // and v written there, the step count and the bf16 weights kept.
    virtual void read_slice(StateVector which, std::size_t offset, std::span<float> out) = 0;
    virtual void write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) = 0;
    virtual float adamw_step(float lr, const AdamWConfig& config) = 0;  // returns the global gradient norm
    virtual int steps() const = 0;

    // ---- the DiLoCo pseudo-gradient Δ = θ − θ_i on the device: whole (a replica) or per shard ----
    virtual std::vector<std::byte> encode_delta(std::span<const float> theta, const std::string& spec) = 0;
    virtual ShardPayload encode_shard_delta(std::span<const float> theta, const std::string& spec) = 0;

    // Fills the params, grads and optimizer categories; returns the bytes of the model's own
    // allocations (alloc below) that it holds as state, which the model does not count as workspace.
    virtual std::size_t fill_memory(DeviceMemory& m) const = 0;
};

// options.zero3 set: this rank's shard; else a full replica (DDP over options.ddp when set). alloc is
// the model's persistent, zero-filled device allocation (freed with the model); stream its stream.
std::unique_ptr<CudaStorage> make_cuda_storage(const ParamLayout& layout, const CudaModelOptions& options,
                                               cudaStream_t stream, const std::function<void*(std::size_t)>& alloc);

}  // namespace arch::cuda
