// core/adamw.h: the inner optimizer: AdamW with decoupled weight decay (torch.optim.AdamW semantics)
// and global-norm gradient clipping (torch.nn.utils.clip_grad_norm_ semantics), over the flat buffers.
// Weight decay applies to 2-D tensors only (matmul weights and embeddings), as in llm.c's GPT-2 runs.
// m and v live in the backend's memory with the parameters' layout.
#pragma once

#include <span>
#include <vector>

#include "core/backend.h"
#include "core/param_layout.h"

namespace arch {

// Which of a model's fp32 vectors a slice reads (Model::read_slice, InnerLoop::read_slice): the
// parameters θ_i, or AdamW's first or second moment.
enum class StateVector { params, m, v };

struct AdamWConfig {
    float beta1 = 0.9f;
    float beta2 = 0.95f;
    float eps = 1e-8f;
    float weight_decay = 0.1f;
    float grad_clip = 1.0f;  // max global norm; <= 0 disables clipping
};

// The factor gradients are multiplied by for global-norm clipping (1 when the norm is within
// grad_clip or clipping is off); throws when the norm is NaN or Inf. Shared by AdamW and ZeRO-3.
float clip_scale(float norm, const AdamWConfig& config);

// Runs of consecutive tensors with the same weight-decay flag, in layout order: the ranges an AdamW
// over the whole flat buffer updates with or without decay (the CPU AdamW and the GPU model's).
struct DecayRange {
    std::size_t begin, size;
    bool decay;
};
std::vector<DecayRange> decay_ranges(const ParamLayout& layout);

class AdamW {
public:
    AdamW(const ParamLayout& layout, Backend& backend);
    ~AdamW();
    AdamW(const AdamW&) = delete;
    AdamW& operator=(const AdamW&) = delete;

    // One update with learning rate lr; returns the gradients' global L2 norm before clipping.
    float step(float* params, const float* grads, float lr, const AdamWConfig& config);

    int steps_taken() const { return steps_; }
    std::size_t size() const { return n_; }
    void get_state(std::span<float> m, std::span<float> v) const;  // host copies, size() each
    void set_state(std::span<const float> m, std::span<const float> v, int steps);
    // [offset, offset + size) of m or v, and of both; the step count stays.
    void get_state_slice(StateVector which, std::size_t offset, std::span<float> out) const;
    void set_state_slice(std::size_t offset, std::span<const float> m, std::span<const float> v);

private:
    Backend& backend_;
    std::size_t n_;
    float* m_;
    float* v_;
    int steps_ = 0;
    std::vector<DecayRange> ranges_;
};

// Learning rate at a 0-based step: linear warmup over warmup_steps to max_lr, then constant or a
// cosine decay to max_lr * final_fraction at total_steps (llm.c's schedule).
struct LrSchedule {
    enum class Kind { constant, cosine };
    Kind kind = Kind::cosine;
    float max_lr = 3e-4f;
    int warmup_steps = 0;
    int total_steps = 1;
    float final_fraction = 0.1f;
    float at(int step) const;
};

}  // namespace arch
