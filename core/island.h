// core/island.h: an island: N devices (one thread each, one process) that run the inner training loop
// together every step, data parallel (DDP: whole model per device, gradients all-reduced) or ZeRO-3
// (1/N of parameters, gradients and AdamW state per device). One device is plain training.
// Batch semantics: each device runs grad_accum micro-batches of B rows per step, so one step covers
// N * grad_accum * B rows; micro-batch m of the step (m = k*N + r) goes to device r at micro-step k,
// which makes an island of N equal to one device with grad_accum * N on the same data order.
// Devices are CPU backends (a Transformer over a ParamStore: DDP with bucketed all-reduce during backward, or
// ZeRO-3) or whole Models such as GPUs (DDP: each device's gradients all-reduced after its backward
// passes, then the same AdamW step everywhere; or ZeRO-3 models that shard themselves).
// Each device kind is one IslandDevice (core/island_devices.h), chosen when the island is made; an
// Island is an InnerLoop (core/inner_loop.h) like the one-device Trainer.
// It prints nothing; callers report the StepStats and memory() it returns. See docs/island.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/collective.h"
#include "core/device_memory.h"
#include "core/inner_loop.h"
#include "core/transformer.h"
#include "core/trainer.h"
#include "core/zero3.h"

namespace arch {

class IslandDevice;

enum class Parallel { ddp, zero3 };
Parallel parse_parallel(const std::string& name);  // "ddp" | "zero3"; throws otherwise
const char* parallel_name(Parallel parallel);

class Island final : public InnerLoop {
public:
    // backends[r] and collectives[r] belong to device r; the collectives form one group of
    // backends.size() ranks (e.g. make_cpu_collectives(n)). Checks the config as Trainer does.
    Island(const ModelConfig& model, const TrainConfig& config, Parallel parallel,
           std::vector<std::unique_ptr<Backend>> backends, std::vector<std::unique_ptr<Collective>> collectives,
           Recompute recompute = Recompute::none);
    // Whole models, one per device (e.g. GPUs), collectives[r] for models[r]: data parallel (DDP), or
    // ZeRO-3 where every model was made as one rank's shard over that collective (Model::sharded()).
    Island(const ModelConfig& model, const TrainConfig& config, std::vector<std::unique_ptr<Model>> models,
           std::vector<std::unique_ptr<Collective>> collectives, Parallel parallel = Parallel::ddp);
    ~Island();
    Island(const Island&) = delete;
    Island& operator=(const Island&) = delete;

    int devices() const override { return static_cast<int>(devices_.size()); }
    Parallel parallel() const { return parallel_; }
    const TrainConfig& config() const override { return config_; }
    const ModelConfig& model_config() const { return model_config_; }
    std::size_t num_params() const override { return layout_.num_params(); }

    // The family's init (same values as Transformer::init_weights(seed) on one device).
    void init_weights(std::uint64_t seed) override;
    // The full flat parameter vector θ (ParamLayout order, host memory); ZeRO-3 gathers / scatters it.
    void get_params(std::span<float> full) override;
    void set_params(std::span<const float> full) override;

    using InnerLoop::step;
    StepStats step(float lr) override;  // throws if training diverges; after any throw the island is unusable
    float evaluate() override;  // mean val loss over val_batches (spread over the devices); throws without val data
    int steps_done() const override { return steps_done_; }
    bool has_val() const override { return val_ != nullptr; }

    // The inner AdamW moments m and v, whole vectors in ParamLayout order (ZeRO-3 gathers and
    // scatters them; DDP devices hold identical copies). set keeps the step count: DES-LOC replaces
    // the moments in the middle of a run (peers/moment_sync.h).
    void get_adamw_state(std::span<float> m, std::span<float> v) override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v) override;
    // Slices with no gather: each device reads or writes the parts it holds (a replica: rank 0 reads,
    // every rank writes; shards: each its own).
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override;
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override;

    // Same files as Trainer::save / resume (checkpoint + CKPT.state), so runs move between modes.
    void save(const std::string& path) override;
    void resume(const std::string& path) override;

    Island* island() override { return this; }

    std::vector<DeviceMemory> memory() const;      // per device
    std::uint64_t bytes_sent(int device) const;    // by that device's collective so far
    Zero3Store* zero3(int device);                 // its shard (for per-slice pseudo-gradients); null under DDP
    Model* model(int device);                      // a whole model (a GPU); null for CPU backends
    // fn(r) on every device's thread at once (collectives every rank must join); rethrows the first
    // failure, after which the island is unusable.
    void on_each_device(const std::function<void(int)>& fn) { run_on_devices(fn); }

private:
    struct Device;
    void add_devices(std::vector<std::unique_ptr<Collective>> collectives, std::size_t count,
                     const std::function<void(Device&, int)>& make);
    void open_data();
    void run_on_devices(const std::function<void(int)>& fn);
    // fn(device, r) where whole vectors are read: on every rank at once where they are gathered from
    // shards, else on rank 0 alone (which holds them whole); fn passes empty spans on ranks other than 0.
    void on_readers(const std::function<void(IslandDevice&, int)>& fn);
    void read_batches(DataLoader& loader, int count);
    void set_moments(std::span<const float> m, std::span<const float> v, std::optional<int> steps);  // none: keep each's

    ModelConfig model_config_;
    TrainConfig config_;
    Parallel parallel_;
    ParamLayout layout_;
    std::vector<std::unique_ptr<Device>> devices_;
    std::unique_ptr<DataLoader> train_;
    std::unique_ptr<DataLoader> val_;
    DataCursor val_start_;
    std::vector<int> inputs_, targets_;  // the step's micro-batches, B*T ids each, back to back
    int steps_done_ = 0;
    bool failed_ = false;
};

}  // namespace arch
