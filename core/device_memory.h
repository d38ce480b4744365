// core/device_memory.h: what one device of an island holds for training, in bytes, by kind, as the
// engine allocated it (not computed from a formula). core/memory_plan.h predicts the same kinds, so a
// plan can be checked against a run. Activations and workspace are the capacity of the largest batch seen.
#pragma once

#include <cstddef>

namespace arch {

struct DeviceMemory {
    std::size_t params_bytes = 0;       // persistent parameters the passes read (whole model, or this rank's shard)
    std::size_t grads_bytes = 0;        // persistent gradients (whole, or shard)
    std::size_t optimizer_bytes = 0;    // AdamW m and v, and fp32 master weights where the passes read bf16
    std::size_t gathered_bytes = 0;     // ZeRO-3: peak of the transient full-unit buffers (gathered params, unit grads)
    std::size_t activations_bytes = 0;  // kept from forward to backward: per-layer buffers, logits, ids, losses
    std::size_t workspace_bytes = 0;    // shared scratch of the passes (backward buffers, GEMM workspace, tables)
    // Parameters, gradients and optimizer state: what the parallel mode decides.
    std::size_t state_bytes() const { return params_bytes + grads_bytes + optimizer_bytes; }
    std::size_t total() const { return state_bytes() + gathered_bytes + activations_bytes + workspace_bytes; }
};

}  // namespace arch
