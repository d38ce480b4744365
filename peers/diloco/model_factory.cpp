// peers/diloco/model_factory.cpp: device strings to Models; CUDA parts only where ARCH_HAVE_CUDA.
#include "peers/diloco/model_factory.h"

#include <cstdlib>

#include "core/error.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"
#ifdef ARCH_HAVE_NCCL
#include "kernels/cuda/nccl_collective.h"
#endif
#ifdef ARCH_HAVE_CUDA
#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device_codec.h"
#include "kernels/cuda/island_codec.h"
#endif

namespace arch::diloco {

bool cuda_backend_built() {
#ifdef ARCH_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

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
        if (!cuda_backend_built())
            throw Error("device '" + device + "': this archipelago was built without the CUDA backend (no CUDA "
                        "toolkit found at build time); use --device cpu");
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

#ifdef ARCH_HAVE_CUDA
cuda::CudaModelOptions cuda_options(int gpu, const DeviceOptions& o) {
    cuda::CudaModelOptions options;
    options.device = gpu;
    options.attention = o.attention == "fused" ? cuda::AttentionKind::fused : cuda::AttentionKind::unfused;
    options.recompute = o.recompute;
    options.offload = o.offload;
    return options;
}
#endif

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
#ifdef ARCH_HAVE_CUDA
    return cuda::make_cuda_model(config, cuda_options(d.index, options));
#else
    throw Error("unreachable: CUDA device without the CUDA backend");
#endif
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
#ifdef ARCH_HAVE_NCCL
    std::vector<int> gpus;
    for (int r = 0; r < devices; ++r) gpus.push_back(d.index + r);
    auto collectives = make_nccl_collectives(gpus);
    std::vector<std::unique_ptr<Model>> models;
    for (int r = 0; r < devices; ++r) {
        cuda::CudaModelOptions options = cuda_options(gpus[r], device_options);
        if (parallel == Parallel::zero3) options.zero3 = collectives[r].get();  // each GPU holds its shard
        else options.ddp = collectives[r].get();  // all-reduce each unit as backward leaves it
        models.push_back(cuda::make_cuda_model(config, options));
    }
    return std::make_unique<Island>(config, train, std::move(models), std::move(collectives), parallel);
#else
    throw Error("an island of several GPUs needs NCCL, which was not found when this archipelago was built");
#endif
}

std::optional<std::vector<std::byte>> encode_delta_on_device(Model& model, std::span<const float> theta,
                                                             const std::string& spec) {
#ifdef ARCH_HAVE_CUDA
    auto* gpu = dynamic_cast<cuda::CudaModel*>(&model);
    if (gpu != nullptr && cuda::device_codec_supports(spec)) return gpu->encode_delta(theta, spec);
#endif
    return std::nullopt;
}

std::optional<std::vector<std::byte>> encode_delta_on_island(Island& island, std::span<const float> theta,
                                                             const std::string& spec) {
#ifdef ARCH_HAVE_CUDA
    return cuda::encode_island_delta(island, theta, spec);
#else
    return std::nullopt;
#endif
}

}  // namespace arch::diloco
