// kernels/cuda/island_codec.h: the DiLoCo pseudo-gradient of a ZeRO-3 island of GPUs, encoded per
// shard: every rank forms Δ = θ − θ_i on its own shard and quantizes the codec blocks that start
// there, and the parts are joined into the bytes the CPU codec gives for the whole Δ, so θ_i is
// never gathered into one place. Used by the peer (peers/diloco/model_factory) and its tests.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/island.h"

namespace arch::cuda {

// The wire bytes of Δ for `spec`, or nullopt when this island cannot encode per shard (not ZeRO-3
// over CUDA models, or a spec without a device codec: int8/int4/fp4 without +ef). Throws the CPU
// codec's message for a non-finite Δ, after every rank has finished (the island stays usable).
std::optional<std::vector<std::byte>> encode_island_delta(Island& island, std::span<const float> theta,
                                                          const std::string& spec);

}  // namespace arch::cuda
