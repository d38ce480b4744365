// core/memory_modes.h: the modes that trade compute or host memory for device memory, as the engines
// and `archipelago plan` name them: activation recomputation and optimizer offload (docs/plan.md).
#pragma once

#include <string>

namespace arch {

// none: forward keeps every activation for backward. attention: each layer drops attention's
// internals (its output, and P or the log-sum-exp) and backward recomputes them. block: forward
// keeps only each block's input and backward recomputes the rest of the block.
enum class Recompute { none, attention, block };
// optimizer: fp32 master weights, AdamW m and v in (pinned) host memory, the step on the CPU.
enum class Offload { none, optimizer };

Recompute parse_recompute(const std::string& name);  // "none" | "attention" | "block"; throws otherwise
Offload parse_offload(const std::string& name);      // "none" | "optimizer"; throws otherwise
const char* recompute_name(Recompute recompute);
const char* offload_name(Offload offload);

}  // namespace arch
