// peers/diloco/global_model.h: the global state of a DiLoCo run, held identically by the host and
// every island: θ (fp32, host memory), the outer optimizer, and the rule that turns a round's update
// bytes into the next θ. The host makes those bytes from the islands' pseudo-gradients (aggregate,
// then encode with the downlink codec); everyone, host included, decodes the same bytes and applies
// the same outer step, so all end the round with bit-identical θ, checked by hash().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "outer_optimizer/aggregator.h"
#include "outer_optimizer/outer_optimizer.h"

namespace arch::diloco {

struct OuterConfig {
    std::string optimizer = "nesterov";  // nesterov | average | delayed-nesterov
    float lr = 0.7f;
    float momentum = 0.9f;
    uint32_t period = 1;                 // delayed-nesterov: momentum every `period` updates
    std::string aggregator = "mean";     // outer_optimizer/aggregator.h spec
    std::string down_codec = "fp32";     // how the aggregated update travels to the islands
    std::string screen = "clip";         // off | clip | reject: a Δ far above the round's median norm
    double screen_factor = 5.0;          // how far above the median norm a Δ may go
};

class GlobalModel {
public:
    GlobalModel(std::vector<float> theta, const OuterConfig& config);

    std::span<const float> theta() const { return theta_; }
    uint64_t updates_applied() const { return optimizer_->steps(); }

    // Host: aggregates one round's pseudo-gradients (give them in a canonical order) into update bytes.
    std::vector<std::byte> make_update(std::span<const outer::Contribution> contributions);
    // Everyone: decodes update bytes and applies one outer step. Validates first (size, codec, NaN/Inf),
    // and θ after the step (finite): on error throws arch::Error and θ and the optimizer are unchanged.
    void apply_update(std::span<const std::byte> update);

    std::string hash() const;  // BLAKE2b-256 of θ's bytes, hex (computed once per θ)

    // θ and the outer optimizer's state, for checkpoints and late joiners.
    std::vector<std::byte> save_state() const;
    std::size_t state_bytes() const;
    void save_state(std::span<std::byte> out) const;  // exactly state_bytes(): into a blob, in place
    void load_state(std::span<const std::byte> bytes);

private:
    OuterConfig config_;
    std::vector<float> theta_;
    std::unique_ptr<outer::OuterOptimizer> optimizer_;
    std::unique_ptr<outer::Aggregator> aggregator_;
    std::unique_ptr<compression::Codec> down_codec_;
    std::vector<float> scratch_;
    mutable std::string hash_;  // of theta_; empty after θ changes
};

std::string hash_floats(std::span<const float> values);
std::string hash_bytes(std::span<const std::byte> bytes);  // BLAKE2b-256, hex

}  // namespace arch::diloco
