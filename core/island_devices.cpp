// core/island_devices.cpp: the three kinds of island device (island_devices.h). Members are declared
// in the order they are built on one another, so each is destroyed before what it uses: the model
// before its store, the store before its backend; the collective belongs to the Island and outlives them.
#include "core/island_devices.h"

#include <utility>

#include "core/ddp.h"
#include "core/error.h"
#include "core/shard_layout.h"

namespace arch {

namespace {

// A whole model (a GPU): it reduces its own gradients over the collective, during backward or after.
class WholeModelDevice final : public IslandDevice {
public:
    WholeModelDevice(std::unique_ptr<Model> model, Collective& collective)
        : collective_(collective), model_(std::move(model)) {}

    Model& model() override { return *model_; }
    void begin_micro_batch(bool last) override { model_->set_last_micro_batch(last); }
    void finish_grads() override { model_->reduce_grads(collective_); }
    float adamw_step(float lr, const AdamWConfig& config) override { return model_->adamw_step(lr, config); }

    bool sharded() const override { return model_->sharded(); }
    void get_params(std::span<float> full) override { model_->get_params(full); }
    void set_params(std::span<const float> full) override { model_->set_params(full); }
    void get_adamw_state(std::span<float> m, std::span<float> v) override { model_->get_adamw_state(m, v); }
    void set_adamw_state(std::span<const float> m, std::span<const float> v, std::optional<int> steps) override {
        model_->set_adamw_state(m, v, steps.value_or(model_->adamw_steps()));
    }
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        return model_->read_slice(which, offset, out);
    }
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override {
        return model_->write_moments_slice(offset, m, v);
    }

    DeviceMemory memory() const override { return model_->memory(); }
    Model* whole_model() override { return model_.get(); }

private:
    Collective& collective_;
    std::unique_ptr<Model> model_;
};

// A CPU device: a Transformer on its own backend over a store of the island's parameters.
template <class Store>
class StoreDevice : public IslandDevice {
public:
    StoreDevice(const ModelConfig& config, const ParamLayout& layout, std::unique_ptr<Backend> backend,
                Collective& collective, Recompute recompute)
        : layout_(layout),
          backend_(std::move(backend)),
          store_(std::make_unique<Store>(layout, *backend_, collective)),
          net_(make_transformer(config, *backend_, store_.get())) {
        net_->set_recompute(recompute);
    }

    Model& model() override { return *net_; }
    void finish_grads() override { store_->wait_grads(); }

protected:
    // The store's memory with the passes' own buffers, which the Transformer holds whatever the store.
    DeviceMemory with_passes(DeviceMemory m) const {
        const DeviceMemory passes = net_->memory();
        m.activations_bytes = passes.activations_bytes;
        m.workspace_bytes = passes.workspace_bytes;
        return m;
    }

    const ParamLayout& layout_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Store> store_;
    std::unique_ptr<Transformer> net_;
};

// DDP over a DdpStore: whole buffers on every rank, gradients all-reduced bucket by bucket during the
// last micro-batch's backward, then the same AdamW step everywhere.
class DdpDevice final : public StoreDevice<DdpStore> {
public:
    DdpDevice(const ModelConfig& config, const ParamLayout& layout, std::unique_ptr<Backend> backend,
              Collective& collective, Recompute recompute)
        : StoreDevice(config, layout, std::move(backend), collective, recompute),
          adamw_(std::make_unique<AdamW>(layout, *backend_)) {}

    void begin_micro_batch(bool last) override { store_->set_sync(last); }
    float adamw_step(float lr, const AdamWConfig& config) override {
        return adamw_->step(store_->all_params(), store_->all_grads(), lr, config);
    }

    bool sharded() const override { return false; }
    void get_params(std::span<float> full) override {
        backend_->download(full.data(), store_->all_params(), full.size_bytes());
    }
    void set_params(std::span<const float> full) override {
        backend_->upload(store_->all_params(), full.data(), full.size_bytes());
    }
    void get_adamw_state(std::span<float> m, std::span<float> v) override { adamw_->get_state(m, v); }
    void set_adamw_state(std::span<const float> m, std::span<const float> v, std::optional<int> steps) override {
        adamw_->set_state(m, v, steps.value_or(adamw_->steps_taken()));
    }
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        if (which != StateVector::params) {
            adamw_->get_state_slice(which, offset, out);
            return true;
        }
        if (offset > layout_.num_params() || out.size() > layout_.num_params() - offset)
            throw Error("read_slice: the slice runs past the parameters");
        backend_->download(out.data(), store_->all_params() + offset, out.size_bytes());
        return true;
    }
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override {
        adamw_->set_state_slice(offset, m, v);
        return true;
    }

    DeviceMemory memory() const override {
        DeviceMemory m = store_->memory();
        m.optimizer_bytes = 2 * layout_.num_params() * sizeof(float);  // AdamW's m and v
        return with_passes(m);
    }

private:
    std::unique_ptr<AdamW> adamw_;
};

// ZeRO-3 over a Zero3Store: this rank's shard of the parameters, gradients and AdamW state; whole
// vectors are gathered from and scattered to the shards.
class Zero3Device final : public StoreDevice<Zero3Store> {
public:
    using StoreDevice::StoreDevice;

    void begin_pass(Zero3Store::Pass pass) override { store_->begin_pass(pass); }
    float adamw_step(float lr, const AdamWConfig& config) override { return store_->adamw_step(lr, config); }

    bool sharded() const override { return true; }
    void get_params(std::span<float> full) override { store_->gather_to_host(store_->shard_params(), full); }
    void set_params(std::span<const float> full) override { store_->scatter_from_host(full, store_->shard_params()); }
    void get_adamw_state(std::span<float> m, std::span<float> v) override {
        store_->gather_to_host(store_->shard_m(), m);
        store_->gather_to_host(store_->shard_v(), v);
    }
    void set_adamw_state(std::span<const float> m, std::span<const float> v, std::optional<int> steps) override {
        store_->scatter_from_host(m, store_->shard_m());
        store_->scatter_from_host(v, store_->shard_v());
        if (steps) store_->set_steps_taken(*steps);
    }
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        const float* shard = which == StateVector::params ? store_->shard_params()
                             : which == StateVector::m    ? store_->shard_m()
                                                          : store_->shard_v();
        for_each_shard_part(store_->shard_ranges(), offset, out.size(), [&](std::size_t at, std::size_t from, std::size_t n) {
            backend_->download(out.data() + at, shard + from, n * sizeof(float));
        });
        return true;
    }
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override {
        for_each_shard_part(store_->shard_ranges(), offset, m.size(), [&](std::size_t at, std::size_t to, std::size_t n) {
            backend_->upload(store_->shard_m() + to, m.data() + at, n * sizeof(float));
            backend_->upload(store_->shard_v() + to, v.data() + at, n * sizeof(float));
        });
        return true;
    }

    DeviceMemory memory() const override { return with_passes(store_->memory()); }
    Zero3Store* zero3() override { return store_.get(); }
};

}  // namespace

std::unique_ptr<IslandDevice> make_whole_model_device(std::unique_ptr<Model> model, Collective& collective) {
    return std::make_unique<WholeModelDevice>(std::move(model), collective);
}

std::unique_ptr<IslandDevice> make_ddp_device(const ModelConfig& config, const ParamLayout& layout,
                                              std::unique_ptr<Backend> backend, Collective& collective,
                                              Recompute recompute) {
    return std::make_unique<DdpDevice>(config, layout, std::move(backend), collective, recompute);
}

std::unique_ptr<IslandDevice> make_zero3_device(const ModelConfig& config, const ParamLayout& layout,
                                                std::unique_ptr<Backend> backend, Collective& collective,
                                                Recompute recompute) {
    return std::make_unique<Zero3Device>(config, layout, std::move(backend), collective, recompute);
}

}  // namespace arch
