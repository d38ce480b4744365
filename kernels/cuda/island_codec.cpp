// kernels/cuda/island_codec.cpp: encode_island_delta.
#include "kernels/cuda/island_codec.h"

#include "kernels/cuda/cuda_model.h"
#include "kernels/cuda/device_codec.h"

namespace arch::cuda {

std::optional<std::vector<std::byte>> encode_island_delta(Island& island, std::span<const float> theta,
                                                          const std::string& spec) {
    if (island.parallel() != Parallel::zero3 || !device_codec_supports(spec)) return std::nullopt;
    std::vector<CudaModel*> ranks;
    for (int r = 0; r < island.devices(); ++r) {
        auto* m = dynamic_cast<CudaModel*>(island.model(r));
        if (m == nullptr || !m->sharded()) return std::nullopt;
        ranks.push_back(m);
    }
    std::vector<ShardPayload> parts(ranks.size());
    island.on_each_device([&](int r) { parts[r] = ranks[r]->encode_shard_delta(theta, spec); });
    return join_shard_payloads(spec, theta.size(), parts);
}

}  // namespace arch::cuda
