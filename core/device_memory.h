// core/device_memory.h: what one device of an island holds for training, in bytes, by kind.
// Activations are not counted (they depend on B and T, not on the parallel mode).
#pragma once

#include <cstddef>

namespace arch {

struct DeviceMemory {
    std::size_t params_bytes = 0;     // persistent parameters (whole model, or this rank's shard)
    std::size_t grads_bytes = 0;      // persistent gradients (whole, or shard)
    std::size_t optimizer_bytes = 0;  // AdamW m and v
    std::size_t gathered_bytes = 0;   // ZeRO-3: peak of the transient full-unit buffers (gathered params, unit grads)
    std::size_t total() const { return params_bytes + grads_bytes + optimizer_bytes + gathered_bytes; }
};

}  // namespace arch
