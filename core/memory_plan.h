// core/memory_plan.h: "what fits on my rig?" as arithmetic: the bytes one device of an island holds
// for training (by the categories core/device_memory.h reports from the engine's own allocations)
// and the host memory the island and its DiLoCo peer need. Pure: it allocates nothing, so a 13B
// plan is instant. It models the buffers the engines allocate today (CPU: fp32 everything; CUDA:
// bf16 weights and activations, fp32 master, gradients, m and v; ZeRO-3 shards from the engines' own
// core/shard_layout.h; recompute and offload as the CUDA engine builds them, docs/plan.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/island.h"
#include "core/memory_modes.h"
#include "core/model_config.h"

namespace arch {

enum class PlanDevice { cpu, cuda };
PlanDevice parse_plan_device(
    const std::string& name);                        // "cpu" | "cuda"; throws arch::Error otherwise
// "24GiB", "24 GB", "512MiB", "1.5TiB", "1073741824": binary (KiB, MiB, GiB, TiB) or decimal (KB,
// MB, GB, TB) units, or plain bytes. Throws arch::Error naming the text for anything else.
std::size_t parse_bytes(const std::string& text);
std::string format_bytes(std::size_t bytes);  // "512.0 MiB", "23.41 GiB"

struct PlanRequest {
    ModelConfig model;
    PlanDevice device = PlanDevice::cuda;
    int devices = 1;                      // N, in one island
    std::size_t device_memory_bytes = 0;  // per device; 0: no budget, fits is always true
    int B = 1;                            // micro-batch
    int T = 0;                            // sequence length; 0: the model's max
    Parallel parallel = Parallel::ddp;
    Recompute recompute = Recompute::none;
    Offload offload = Offload::none;  // GPUs only
    bool fused_attention = true;      // CUDA: the fused kernel (the default) or the unfused one
    bool error_feedback = true;  // the peer's uplink codec keeps an error-feedback residual (+ef)
    bool overlap = false;        // run.mode = "overlap": θ_i at the send and the merge's scratch
    bool desloc = false;         // outer.sync_moments_every > 0: DES-LOC's rounds carry the AdamW moments
    double update_bytes_per_param = 4;  // the downlink codec's bytes (fp32: 4, int8: about 1)
};

// Per device, in the categories of core/device_memory.h.
struct DeviceBytes {
    std::size_t params = 0;     // what the passes read: fp32 (CPU), bf16 (CUDA); whole or shard
    std::size_t grads = 0;      // fp32, whole or shard
    std::size_t optimizer = 0;  // AdamW m and v, plus fp32 master weights on CUDA; 0 when offloaded
    std::size_t activations = 0;  // kept from forward to backward
    std::size_t workspace = 0;    // the passes' shared scratch, cuBLASLt's workspace, tables
    std::size_t comm = 0;  // communication buffers: ZeRO-3's gathered units (DDP reduces in place)
    std::size_t reserve =
        0;  // CUDA: context, NCCL's own buffers, allocator slack (a fixed allowance)
    std::size_t total() const {
        return params + grads + optimizer + activations + workspace + comm + reserve;
    }
};

// Host memory of the island's machine (all its devices), and of its DiLoCo peer (docs/run-config.md,
// "Memory": what the protocol needs of a peer, and no outer state).
struct HostBytes {
    std::size_t offloaded_optimizer = 0;  // every device's fp32 master, m and v shards
    std::size_t offload_staging = 0;  // pinned buffers the gradients stream through to the CPU step
    std::size_t theta_replica = 0;    // the peer's copy of the global θ: the round's start
    std::size_t pseudo_gradient = 0;  // Δ whole (no +ef); with +ef it is formed in the residual, θ_i read a slice at a time
    std::size_t ef_residual = 0;      // the error-feedback residual (+ef)
    std::size_t update = 0;           // an update as it arrives (the downlink codec's bytes)
    std::size_t overlap_carry = 0;    // overlap mode: θ_i at the last send, and a scratch for the merge
    // DES-LOC's rounds: the moments in bf16 (m and v, P), as the island sends them and as the
    // update brings their mean; they leave and enter the engine a slice at a time (peers/peer.cpp)
    std::size_t moments = 0;
    std::size_t offload() const { return offloaded_optimizer + offload_staging; }
    std::size_t diloco() const { return theta_replica + pseudo_gradient + ef_residual + update + overlap_carry + moments; }
    // With --state-on-disk θ and the residual are memory-mapped files: disk, not RAM.
    std::size_t diloco_on_disk() const { return theta_replica + ef_residual; }
    std::size_t total() const { return offload() + diloco(); }
    std::size_t total_state_on_disk() const { return total() - diloco_on_disk(); }
};

struct MemoryPlan {
    PlanRequest request;  // with T resolved
    std::size_t num_params = 0;
    DeviceBytes device;
    HostBytes host;
    bool fits = false;        // device.total() <= request.device_memory_bytes
    int max_micro_batch = 0;  // the largest B that fits with everything else equal; 0 when none
};

// Throws arch::Error for a request that cannot be planned (a bad model, N < 1, T above the model's
// max, offload on CPU devices).
MemoryPlan plan_memory(const PlanRequest& request);

// The device bytes alone, for one micro-batch size (what plan_memory searches over).
DeviceBytes plan_device_bytes(const PlanRequest& request);

// The modes `archipelago plan` prints side by side: DDP, ZeRO-3, ZeRO-3 + recompute (the request's,
// or block), and on GPUs ZeRO-3 + recompute + offload optimizer.
std::vector<PlanRequest> plan_modes(const PlanRequest& request);
std::string plan_mode_name(
    const PlanRequest& request);  // "ddp", "zero3 + recompute block + offload optimizer"

}  // namespace arch
