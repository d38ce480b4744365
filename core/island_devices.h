// core/island_devices.h: the kinds of device an Island trains on, behind one interface, chosen once
// when the island is made: whole models that reduce their own gradients (a GPU each, sharded or not),
// CPU DDP over a DdpStore with one AdamW per rank, and CPU ZeRO-3 shards over a Zero3Store. Each kind
// owns its model and state: how a whole vector (θ, AdamW m and v) goes in and out, the optimizer step
// and the memory report. The Island keeps the micro-batches, the data and the threads. Internal to core/island.cpp.
#pragma once

#include <memory>
#include <optional>
#include <span>

#include "core/adamw.h"
#include "core/backend.h"
#include "core/collective.h"
#include "core/device_memory.h"
#include "core/model.h"
#include "core/param_layout.h"
#include "core/transformer.h"
#include "core/zero3.h"

namespace arch {

class IslandDevice {
public:
    virtual ~IslandDevice() = default;

    virtual Model& model() = 0;  // the passes run on it
    // Before each micro-batch of a step: the last one's backward reduces the gradients (DDP).
    virtual void begin_micro_batch(bool last) {}
    virtual void begin_pass(Zero3Store::Pass pass) {}  // before a forward or backward: what ZeRO-3 prefetches
    virtual void finish_grads() = 0;                    // after the step's last backward: every rank's gradients reduced
    virtual float adamw_step(float lr, const AdamWConfig& config) = 0;  // returns the global gradient norm

    // Whole vectors in ParamLayout order. A sharded kind gathers them: every rank calls get_* at once,
    // each on its own thread, with empty spans on ranks other than 0. An unsharded kind holds them
    // whole, so rank 0 alone is asked. set_* is local: every rank takes its part of the whole vector.
    virtual bool sharded() const = 0;
    virtual void get_params(std::span<float> full) = 0;
    virtual void set_params(std::span<const float> full) = 0;
    virtual void get_adamw_state(std::span<float> m, std::span<float> v) = 0;
    virtual void set_adamw_state(std::span<const float> m, std::span<const float> v, std::optional<int> steps) = 0;  // none: keep its own
    // Slices, local (no collective): [offset, offset + out.size()) of θ_i, m or v, all of it from an
    // unsharded kind, the parts its rank holds from a sharded one (the rest of `out` left as it is);
    // and m and v written where this device holds them, its step count kept. false where it cannot.
    virtual bool read_slice(StateVector which, std::size_t offset, std::span<float> out) = 0;
    virtual bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) = 0;

    virtual DeviceMemory memory() const = 0;
    virtual Zero3Store* zero3() { return nullptr; }  // a CPU ZeRO-3 shard (for per-slice pseudo-gradients)
    virtual Model* whole_model() { return nullptr; }  // a whole model (a GPU)
};

// A whole model (Model::sharded() or not) whose gradients it reduces over `collective` itself.
std::unique_ptr<IslandDevice> make_whole_model_device(std::unique_ptr<Model> model, Collective& collective);
// A Transformer on `backend` over a DdpStore (bucketed all-reduce during backward) and an AdamW of the
// whole buffer, identical on every rank. layout must outlive the device.
std::unique_ptr<IslandDevice> make_ddp_device(const ModelConfig& config, const ParamLayout& layout,
                                              std::unique_ptr<Backend> backend, Collective& collective,
                                              Recompute recompute);
// A Transformer on `backend` over a Zero3Store: 1/N of the parameters, gradients and AdamW state.
std::unique_ptr<IslandDevice> make_zero3_device(const ModelConfig& config, const ParamLayout& layout,
                                                std::unique_ptr<Backend> backend, Collective& collective,
                                                Recompute recompute);

}  // namespace arch
