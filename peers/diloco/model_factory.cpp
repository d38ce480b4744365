// peers/diloco/model_factory.cpp: device strings to Models, Islands and inner loops; GPU devices go to the
// program's GPU backend (gpu_backend.h), and a program without one says so.
#include "peers/diloco/model_factory.h"

#include <cstdlib>

#include "core/error.h"
#include "core/trainer.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"

namespace arch::diloco {

DeviceChoice parse_device(const std::string& device) {
    DeviceChoice d;
    if (device == "cpu") return d;
    if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
        d.cuda = true;
        if (device.size() > 5) {
            const std::string n = device.substr(5);
            char* end = nullptr;
            const long v = std::strtol(n.c_str(), &end, 10);
            if (n.empty() || *end != '\0' || v < 0 || v > 1024)
                throw Error("device '" + device + "': the GPU index must be a number, as in cuda:0");
            d.index = static_cast<int>(v);
        }
        if (gpu_backend() == nullptr)
            throw Error("device '" + device + "': this archipelago was built without the CUDA backend (no CUDA "
                        "toolkit found at build time, or a CPU-only package); use --device cpu");
        return d;
    }
    throw Error("device '" + device + "' is not one of cpu, cuda, cuda:N");
}

namespace {

// The options checked for the device: a CPU engine's optimizer state is in host RAM already.
void check_options(const DeviceChoice& d, const DeviceOptions& o) {
    if (o.attention != "fused" && o.attention != "unfused")
        throw Error("attention '" + o.attention + "' is not one of fused, unfused");
    if (!d.cuda && o.offload != Offload::none)
        throw Error(std::string("--offload ") + offload_name(o.offload) +
                    ": offload moves GPU state to host memory and is built for --device cuda; a CPU "
                    "device's optimizer state is in RAM already (use --offload none)");
}

}  // namespace

void check_device_options(const std::string& device, const DeviceOptions& options) {
    check_options(parse_device(device), options);
}

std::unique_ptr<Model> make_model(const ModelConfig& config, const std::string& device, const DeviceOptions& options) {
    const DeviceChoice d = parse_device(device);
    check_options(d, options);
    if (!d.cuda) {
        auto model = make_transformer(config, make_cpu_backend());
        model->set_recompute(options.recompute);
        return model;
    }
    return gpu_backend()->make_model(config, d.index, options);  // parse_device checked there is one
}

std::unique_ptr<Island> make_island(const ModelConfig& config, const TrainConfig& train, int devices,
                                   Parallel parallel, const std::string& device, const DeviceOptions& device_options) {
    if (devices < 1) throw Error("an island needs at least one device, got " + std::to_string(devices));
    const DeviceChoice d = parse_device(device);
    check_options(d, device_options);
    if (!d.cuda) {
        std::vector<std::unique_ptr<Backend>> backends;
        for (int r = 0; r < devices; ++r) backends.push_back(make_cpu_backend());
        return std::make_unique<Island>(config, train, parallel, std::move(backends), make_cpu_collectives(devices),
                                        device_options.recompute);
    }
    std::vector<int> gpus;
    for (int r = 0; r < devices; ++r) gpus.push_back(d.index + r);
    return gpu_backend()->make_island(config, train, gpus, parallel, device_options);
}

std::unique_ptr<InnerLoop> make_inner_loop(const ModelConfig& config, const TrainConfig& train, int devices,
                                           Parallel parallel, const std::string& device, const DeviceOptions& options) {
    if (devices < 1) throw Error("an island needs at least one device, got " + std::to_string(devices));
    if (devices == 1) return std::make_unique<Trainer>(make_model(config, device, options), train);
    if (train.optimizer != InnerOptimizer::adamw)
        throw Error("inner.optimizer = \"" + name_in(inner_optimizer_names(), train.optimizer) + "\" runs on one device only; this island has " +
                    std::to_string(devices) + " (use adamw, or --devices 1)");
    return make_island(config, train, devices, parallel, device, options);
}

std::optional<std::vector<std::byte>> encode_delta_on_device(Model& model, std::span<const float> theta,
                                                             const std::string& spec) {
    const GpuBackend* gpu = gpu_backend();
    return gpu ? gpu->encode_delta(model, theta, spec) : std::nullopt;
}

std::optional<std::vector<std::byte>> encode_delta_on_island(Island& island, std::span<const float> theta,
                                                             const std::string& spec) {
    const GpuBackend* gpu = gpu_backend();
    return gpu ? gpu->encode_delta(island, theta, spec) : std::nullopt;
}

}  // namespace arch::diloco
