// core/island.cpp: Island: one IslandDevice per device (core/island_devices.h), one thread per device
// per phase, the step's micro-batches dealt out in a fixed order, and save/resume of the full
// (gathered) state. What differs between device kinds lives in the devices, not here.
#include "core/island.h"

#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "core/adamw.h"
#include "core/checkpoint.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/island_devices.h"
#include "core/run_state.h"

namespace arch {

Parallel parse_parallel(const std::string& name) {
    if (name == "ddp") return Parallel::ddp;
    if (name == "zero3") return Parallel::zero3;
    throw Error("--parallel must be ddp or zero3, got '" + name + "'");
}

const char* parallel_name(Parallel parallel) { return parallel == Parallel::ddp ? "ddp" : "zero3"; }

// Declaration order is destruction order reversed: the device (its model, store and backend) goes
// before the collective it uses.
struct Island::Device {
    std::unique_ptr<Collective> collective;
    std::unique_ptr<IslandDevice> kind;  // whole model, CPU DDP or CPU ZeRO-3
    std::vector<float> losses;           // per micro-step of the last step (or evaluation round)
    float grad_norm = 0.0f;
};

Island::Island(const ModelConfig& model, const TrainConfig& config, Parallel parallel,
               std::vector<std::unique_ptr<Backend>> backends, std::vector<std::unique_ptr<Collective>> collectives,
               Recompute recompute)
    : model_config_(model), config_(config), parallel_(parallel), layout_((validate(model), model)) {
    check_train_config(config, model);
    const auto make = parallel == Parallel::ddp ? make_ddp_device : make_zero3_device;
    add_devices(std::move(collectives), backends.size(), [&](Device& d, int r) {
        d.kind = make(model, layout_, std::move(backends[r]), *d.collective, recompute);
    });
    open_data();
}

Island::Island(const ModelConfig& model, const TrainConfig& config, std::vector<std::unique_ptr<Model>> models,
               std::vector<std::unique_ptr<Collective>> collectives, Parallel parallel)
    : model_config_(model), config_(config), parallel_(parallel), layout_((validate(model), model)) {
    check_train_config(config, model);
    for (const auto& m : models) {
        if (m->num_params() != layout_.num_params()) throw Error("island: the devices' models differ in size");
        if (m->sharded() != (parallel == Parallel::zero3))
            throw Error(std::string("island: a ") + parallel_name(parallel) + " island of whole models needs " +
                        (parallel == Parallel::zero3 ? "models made as ZeRO-3 shards" : "unsharded models"));
    }
    add_devices(std::move(collectives), models.size(),
                [&](Device& d, int r) { d.kind = make_whole_model_device(std::move(models[r]), *d.collective); });
    open_data();
}

void Island::add_devices(std::vector<std::unique_ptr<Collective>> collectives, std::size_t count,
                         const std::function<void(Device&, int)>& make) {
    if (count == 0) throw Error("an island needs at least one device");
    if (collectives.size() != count)
        throw Error("island: " + std::to_string(count) + " devices but " + std::to_string(collectives.size()) +
                    " collectives");
    const int n = static_cast<int>(count);
    for (int r = 0; r < n; ++r) {
        if (collectives[r]->rank() != r || collectives[r]->world_size() != n)
            throw Error("island: collective " + std::to_string(r) + " is rank " + std::to_string(collectives[r]->rank()) +
                        " of " + std::to_string(collectives[r]->world_size()) + ", expected rank " +
                        std::to_string(r) + " of " + std::to_string(n));
        auto d = std::make_unique<Device>();
        d->collective = std::move(collectives[r]);
        make(*d, r);
        devices_.push_back(std::move(d));
    }
}

void Island::open_data() {
    train_ = std::make_unique<DataLoader>(config_.train_pattern, config_.B, config_.T, config_.order, config_.seed,
                                          model_config_.vocab_size);
    if (!config_.val_pattern.empty()) {
        val_ = std::make_unique<DataLoader>(config_.val_pattern, config_.B, config_.T, DataOrder::sequential, 0,
                                            model_config_.vocab_size);
        val_start_ = val_->cursor();
    }
}

Island::~Island() = default;

void Island::run_on_devices(const std::function<void(int)>& fn) {
    if (failed_) throw Error("island: a device failed earlier; this island cannot continue");
    if (devices() == 1) {
        try {
            fn(0);
        } catch (...) {
            failed_ = true;
            throw;
        }
        return;
    }
    std::mutex mu;
    std::exception_ptr first;
    std::vector<std::thread> threads;
    for (int r = 0; r < devices(); ++r)
        threads.emplace_back([&, r] {
            try {
                fn(r);
            } catch (...) {
                {
                    std::lock_guard<std::mutex> lock(mu);
                    if (!first) first = std::current_exception();
                }
                devices_[r]->collective->abort();  // the other ranks stop waiting for this one
            }
        });
    for (auto& t : threads) t.join();
    if (first) {
        failed_ = true;
        std::rethrow_exception(first);
    }
}

void Island::read_batches(DataLoader& loader, int count) {
    const std::size_t bt = static_cast<std::size_t>(config_.B) * config_.T;
    inputs_.resize(bt * count);
    targets_.resize(bt * count);
    for (int m = 0; m < count; ++m) loader.next_batch(inputs_.data() + m * bt, targets_.data() + m * bt);
}

void Island::init_weights(std::uint64_t seed) {
    set_params(init_params(model_config_, seed));
}

void Island::set_params(std::span<const float> full) {
    if (full.size() != layout_.num_params())
        throw Error("island set_params: expected " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(full.size()));
    for (auto& d : devices_) d->kind->set_params(full);
}

void Island::get_params(std::span<float> full) {
    if (full.size() != layout_.num_params())
        throw Error("island get_params: expected " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(full.size()));
    on_readers([&](IslandDevice& d, int r) { d.get_params(r == 0 ? full : std::span<float>()); });
}

void Island::on_readers(const std::function<void(IslandDevice&, int)>& fn) {
    if (!devices_[0]->kind->sharded()) {
        fn(*devices_[0]->kind, 0);
        return;
    }
    run_on_devices([&](int r) { fn(*devices_[r]->kind, r); });
}

StepStats Island::step(float lr) {
    const auto t0 = Clock::real().now();
    const int N = devices(), A = config_.grad_accum;
    const std::size_t bt = static_cast<std::size_t>(config_.B) * config_.T;
    read_batches(*train_, A * N);
    const float loss_scale = 1.0f / static_cast<float>(A * N);
    run_on_devices([&](int r) {  // forward and backward of this device's micro-batches
        Device& d = *devices_[r];
        IslandDevice& device = *d.kind;
        d.losses.assign(A, 0.0f);
        device.model().zero_grad();
        for (int k = 0; k < A; ++k) {
            const std::size_t m = static_cast<std::size_t>(k) * N + r;
            device.begin_micro_batch(k == A - 1);
            device.begin_pass(Zero3Store::Pass::forward);
            d.losses[k] = device.model().forward(inputs_.data() + m * bt, targets_.data() + m * bt, config_.B, config_.T);
            device.begin_pass(Zero3Store::Pass::backward);
            device.model().backward(loss_scale);
        }
        device.finish_grads();
    });
    double loss_sum = 0.0;  // in micro-batch order, as one device with grad_accum * N adds them
    for (int m = 0; m < A * N; ++m) loss_sum += devices_[m % N]->losses[m / N];
    StepStats s;
    s.loss = static_cast<float>(loss_sum / (A * N));
    if (!std::isfinite(s.loss))
        throw Error("training diverged at step " + std::to_string(steps_done_ + 1) + ": loss is " +
                    std::to_string(s.loss) + " (try a lower --lr)");
    s.lr = lr;
    run_on_devices([&](int r) {  // the optimizer: identical on every rank (DDP) or on each shard (ZeRO-3)
        devices_[r]->grad_norm = devices_[r]->kind->adamw_step(s.lr, config_.adamw);
    });
    s.grad_norm = devices_[0]->grad_norm;
    s.step = ++steps_done_;
    s.seconds = std::chrono::duration<double>(Clock::real().now() - t0).count();
    s.tokens_per_s = static_cast<double>(bt) * A * N / s.seconds;
    return s;
}

float Island::evaluate() {
    if (val_ == nullptr) throw Error("evaluate: no validation data");
    val_->seek(val_start_);
    const int N = devices(), V = config_.val_batches, rounds = (V + N - 1) / N;
    const std::size_t bt = static_cast<std::size_t>(config_.B) * config_.T;
    read_batches(*val_, V);
    run_on_devices([&](int r) {
        Device& d = *devices_[r];
        d.losses.assign(rounds, 0.0f);
        for (int k = 0; k < rounds; ++k) {
            // Under ZeRO-3 every rank must join every gather, so a rank without a batch in the last
            // round repeats batch 0 and drops the result.
            const int m = k * N + r, b = m < V ? m : 0;
            d.kind->begin_pass(Zero3Store::Pass::forward);
            d.losses[k] = d.kind->model().forward(inputs_.data() + b * bt, targets_.data() + b * bt, config_.B, config_.T);
        }
    });
    double sum = 0.0;
    for (int m = 0; m < V; ++m) sum += devices_[m % N]->losses[m / N];
    return static_cast<float>(sum / V);
}

void Island::save(const std::string& path) {
    std::vector<float> params(layout_.num_params());
    get_params(params);
    RunState state;
    state.step = steps_done_;
    state.train_cursor = train_->cursor();
    state.m.resize(layout_.num_params());
    state.v.resize(layout_.num_params());
    get_adamw_state(state.m, state.v);
    write_checkpoint(path, model_config_, params);
    write_run_state(path + ".state", state);
}

void Island::resume(const std::string& path) {
    const std::vector<float> params = read_checkpoint_params(path, model_config_);
    const RunState state = read_run_state(path + ".state", layout_.num_params());
    if (state.step > config_.steps)
        throw Error("run state '" + path + ".state' is at step " + std::to_string(state.step) +
                    ", beyond the configured " + std::to_string(config_.steps) + " steps");
    train_->seek(state.train_cursor);  // validates before anything else changes
    set_params(params);
    set_moments(state.m, state.v, state.step);
    steps_done_ = state.step;
}

void Island::get_adamw_state(std::span<float> m, std::span<float> v) {
    if (m.size() != layout_.num_params() || v.size() != layout_.num_params())
        throw Error("get_adamw_state: buffers of " + std::to_string(m.size()) + " and " + std::to_string(v.size()) +
                    " values, the model has " + std::to_string(layout_.num_params()));
    on_readers([&](IslandDevice& d, int r) {
        d.get_adamw_state(r == 0 ? m : std::span<float>(), r == 0 ? v : std::span<float>());
    });
}

void Island::set_adamw_state(std::span<const float> m, std::span<const float> v) {
    if (m.size() != layout_.num_params() || v.size() != layout_.num_params())
        throw Error("set_adamw_state: " + std::to_string(m.size()) + " and " + std::to_string(v.size()) +
                    " values, the model has " + std::to_string(layout_.num_params()));
    set_moments(m, v, std::nullopt);
}

bool Island::read_slice(StateVector which, std::size_t offset, std::span<float> out) {
    if (offset > layout_.num_params() || out.size() > layout_.num_params() - offset)
        throw Error("island read_slice: the slice runs past the parameters");
    if (!devices_[0]->kind->sharded()) return devices_[0]->kind->read_slice(which, offset, out);
    for (auto& d : devices_)
        if (!d->kind->read_slice(which, offset, out)) return false;
    return true;
}

bool Island::write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    if (m.size() != v.size() || offset > layout_.num_params() || m.size() > layout_.num_params() - offset)
        throw Error("island write_moments_slice: the slice runs past the parameters");
    for (auto& d : devices_)
        if (!d->kind->write_moments_slice(offset, m, v)) return false;
    return true;
}

void Island::set_moments(std::span<const float> m, std::span<const float> v, std::optional<int> steps) {
    for (auto& d : devices_) d->kind->set_adamw_state(m, v, steps);
}

std::vector<DeviceMemory> Island::memory() const {
    std::vector<DeviceMemory> out;
    for (const auto& d : devices_) out.push_back(d->kind->memory());
    return out;
}

std::uint64_t Island::bytes_sent(int device) const { return devices_.at(device)->collective->bytes_sent(); }

Zero3Store* Island::zero3(int device) { return devices_.at(device)->kind->zero3(); }

Model* Island::model(int device) { return devices_.at(device)->kind->whole_model(); }

}  // namespace arch
