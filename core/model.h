// core/model.h: the model a Trainer drives: GPT-2 forward/backward plus its inner AdamW, on some
// device. GPT2 (core/gpt2.h, fp32 on a Backend) is the reference; kernels/cuda's bf16 GPT-2 is the
// fast one. Everything crossing this interface is host memory in fp32 and the ParamLayout order, so
// checkpoints, run states and pseudo-gradients do not care which device trained.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/adamw.h"
#include "core/collective.h"
#include "core/device_memory.h"
#include "core/error.h"
#include "core/model_config.h"

namespace arch {

class Model {
public:
    virtual ~Model() = default;

    virtual const ModelConfig& config() const = 0;
    virtual std::size_t num_params() const = 0;
    virtual std::string device_name() const = 0;  // "cpu", "cuda:0 (NVIDIA H100 ...)"

    // GPT-2 init: the same values on every device for a seed (drawn on the host).
    virtual void init_weights(uint64_t seed) = 0;
    virtual void set_params(std::span<const float> host) = 0;  // num_params() values, layout order
    virtual void get_params(std::span<float> host) = 0;
    // The values [offset, offset + out.size()) of θ_i, m or v with no copy of the whole: all of them
    // for a whole model, the parts this rank holds for a shard (the rest of `out` is left as it is);
    // false where this model cannot read a slice (its caller then takes the vector whole). Local: no
    // other rank takes part.
    virtual bool read_slice(StateVector which, std::size_t offset, std::span<float> out) { return false; }
    virtual void get_grads(std::span<float> host) = 0;

    // Mean loss over B*T when targets are given (else 0; logits only). Host token ids.
    virtual float forward(const int* inputs, const int* targets, int B, int T) = 0;
    // Accumulates d(loss * loss_scale) into the gradients; needs the preceding forward with targets.
    virtual void backward(float loss_scale = 1.0f) = 0;
    virtual void zero_grad() = 0;
    // Logits (V values) of row (b, t) from the last forward without backward.
    virtual std::vector<float> logits_at(int b, int t) const = 0;

    // Global-norm clipping then one AdamW update with learning rate lr; returns the norm before
    // clipping. Throws (changing nothing) when the norm is NaN or Inf.
    virtual float adamw_step(float lr, const AdamWConfig& config) = 0;
    virtual int adamw_steps() const = 0;
    virtual void get_adamw_state(std::span<float> m, std::span<float> v) const = 0;
    virtual void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) = 0;
    // m and v at [offset, offset + m.size()), the parts this model holds (all, or this rank's), the
    // step count and the weights kept; false where this model cannot (its caller sets them whole).
    virtual bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
        return false;
    }

    // Data parallel over whole models (core/island.h): sums the gradients over the ranks of
    // `collective`, in place in the device's memory, once the backward passes of a step are done.
    // A sharded model (ZeRO-3) has reduce-scattered them during backward: this waits for that.
    virtual void reduce_grads(Collective& collective) {
        throw Error("the " + device_name() + " model cannot be trained data-parallel as a whole");
    }
    // Data parallel models that reduce during backward (DDP on GPUs) do it only on the step's last
    // micro-batch: the island says which one comes before its forward.
    virtual void set_last_micro_batch(bool last) {}
    // True when the model holds one rank's shard of an island's state (ZeRO-3 on GPUs): get_params,
    // get_grads and get_adamw_state are then collectives every rank of the island calls, where ranks
    // that need no result may pass empty spans; set_params and set_adamw_state keep this rank's slices.
    virtual bool sharded() const { return false; }
    // Persistent parameters, gradients and optimizer state on the device (activations not counted).
    virtual DeviceMemory memory() const = 0;
};

}  // namespace arch
