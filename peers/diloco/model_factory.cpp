// peers/diloco/model_factory.cpp: device strings to Models; CUDA parts only where ARCH_HAVE_CUDA.
#include "peers/diloco/model_factory.h"

#include <cstdlib>

#include "core/error.h"
#include "core/gpt2.h"
#include "kernels/cpu/cpu_backend.h"
#ifdef ARCH_HAVE_CUDA
#include "kernels/cuda/cuda_gpt2.h"
#include "kernels/cuda/device_codec.h"
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

std::unique_ptr<Model> make_model(const ModelConfig& config, const std::string& device, const std::string& attention) {
    const DeviceChoice d = parse_device(device);
    if (attention != "fused" && attention != "unfused")
        throw Error("attention '" + attention + "' is not one of fused, unfused");
    if (!d.cuda) return std::make_unique<GPT2>(config, make_cpu_backend());
#ifdef ARCH_HAVE_CUDA
    cuda::CudaModelOptions options;
    options.device = d.index;
    options.attention = attention == "fused" ? cuda::AttentionKind::fused : cuda::AttentionKind::unfused;
    return cuda::make_cuda_gpt2(config, options);
#else
    throw Error("unreachable: CUDA device without the CUDA backend");
#endif
}

std::optional<std::vector<std::byte>> encode_delta_on_device(Model& model, std::span<const float> theta,
                                                             const std::string& spec) {
#ifdef ARCH_HAVE_CUDA
    auto* gpu = dynamic_cast<cuda::CudaGPT2*>(&model);
    if (gpu != nullptr && cuda::device_codec_supports(spec)) return gpu->encode_delta(theta, spec);
#endif
    return std::nullopt;
}

}  // namespace arch::diloco
