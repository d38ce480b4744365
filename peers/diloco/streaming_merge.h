// peers/diloco/streaming_merge.h: how a Streaming DiLoCo island merges an updated fragment into its own
// θ_i, τ steps after it sent its Δ (peers/diloco/streaming_island.h): mix, θ_i,p = α θ_i,p + (1 − α) θ_p
// (the paper's), or carry, θ_i,p = θ_p + (θ_i,p − θ_i,p at the send). Named "mix" and "carry"
// (run.toml's streaming.merge).
#pragma once

#include <span>
#include <string>

#include "core/named_enum.h"

namespace arch::diloco {

enum class StreamingMerge { mix, carry };
const EnumNames<StreamingMerge>& streaming_merge_names();  // "mix", "carry" (run.toml's streaming.merge)
StreamingMerge parse_streaming_merge(const std::string& name);  // throws arch::Error naming the choices
// One fragment's merge, in place on mine (θ_i,p): mix, α mine + (1 − α) global; carry, global +
// (mine − sent), or global alone when sent is empty (the island did not send this fragment).
void merge_fragment(StreamingMerge rule, float alpha, std::span<float> mine, std::span<const float> global,
                    std::span<const float> sent);

}  // namespace arch::diloco
