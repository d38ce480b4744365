// peers/diloco/global_model.h: the global state of a DiLoCo run, held identically by the host and
// every island: θ (fp32, host memory), the outer optimizer, and the rule that turns a round's update
// bytes into the next θ. The host makes those bytes from the islands' pseudo-gradients (aggregate,
// then encode with the downlink codec); everyone, host included, decodes the same bytes and applies
// the same outer step, so all end the round with bit-identical θ, checked by hash().
// Streaming DiLoCo: θ in P fragments (peers/diloco/fragments.h), each with its own outer optimizer
// and its own updates; with one fragment (the default) it is plain DiLoCo.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "outer_optimizer/aggregator.h"
#include "outer_optimizer/outer_optimizer.h"
#include "peers/diloco/fragments.h"

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
    // Outer lr schedule (outer_optimizer.h outer_lr_at), counted in each fragment's own updates:
    // warmup over lr_warmup updates, then cosine from lr to final_lr (< 0: constant) at total_updates.
    float final_lr = -1.0f;
    uint32_t lr_warmup = 0;
    uint64_t total_updates = 0;
};
// Throws what GlobalModel's constructor would for this config (optimizer, aggregator, down codec).
void check_outer_config(const OuterConfig& config);

class GlobalModel {
public:
    // fragments: empty is one fragment, the whole vector; otherwise they must cover θ exactly once.
    GlobalModel(std::vector<float> theta, const OuterConfig& config, std::vector<Fragment> fragments = {});

    std::span<const float> theta() const { return theta_; }
    uint64_t updates_applied() const;                 // over all fragments
    uint64_t updates_applied(int fragment) const;
    int fragments() const { return static_cast<int>(fragments_.size()); }
    const Fragment& fragment(int p) const { return fragments_.at(static_cast<std::size_t>(p)); }
    float next_lr(int fragment = 0) const;  // the outer lr the fragment's next update is applied with

    // Host: aggregates one round's pseudo-gradients of a fragment (each fragment(p).size floats; give
    // them in a canonical order) into update bytes.
    std::vector<std::byte> make_update(std::span<const outer::WeightedDelta> contributions, int fragment = 0);
    // Host, with Δs held encoded: the update make_update gives for them decoded whole, each times its
    // scale (a screen's clip), bit for bit, aggregated slice by slice so that no Δ is ever decoded
    // whole. Only for an aggregator that works per coordinate (aggregates_per_coordinate()).
    struct HeldDelta {
        const compression::HeldPayload* payload = nullptr;
        double tokens = 1.0;
        float scale = 1.0f;
    };
    std::vector<std::byte> make_update(std::span<const HeldDelta> held, int fragment = 0);
    bool aggregates_per_coordinate() const { return aggregator_->per_coordinate(); }
    // Everyone: decodes update bytes and applies one outer step to the fragment. Validates first (size,
    // codec, NaN/Inf), and θ after the step (finite): on error throws arch::Error and θ and the
    // optimizer are unchanged.
    void apply_update(std::span<const std::byte> update, int fragment = 0);

    std::string hash() const;  // hash_floats(θ), computed once per θ
    std::string fragment_hash(int p) const;                 // of the fragment's floats, in range order
    void fragment_theta(int p, std::span<float> out) const;  // gathers them

    // θ and the outer optimizer's state, for checkpoints and late joiners.
    std::vector<std::byte> save_state() const;
    std::size_t state_bytes() const;
    void save_state(std::span<std::byte> out) const;  // exactly state_bytes(): into a blob, in place
    void load_state(std::span<const std::byte> bytes);

private:
    OuterConfig config_;
    std::vector<float> theta_;
    std::vector<Fragment> fragments_;
    std::vector<std::unique_ptr<outer::OuterOptimizer>> optimizers_;  // one per fragment
    std::unique_ptr<outer::Aggregator> aggregator_;
    std::unique_ptr<compression::Codec> down_codec_;
    std::vector<float> scratch_;  // the decoded update (and the aggregate), reused every round
    std::vector<float> params_;   // a fragment's θ, gathered (several fragments only)
    std::vector<std::vector<float>> slices_;  // one slice of each held Δ, decoded (make_update of HeldDeltas)
    mutable std::string hash_;  // of theta_; empty after θ changes
};

std::string hash_floats(std::span<const float> values);  // XXH3-128, hex (32 characters)
std::string checksum(std::span<const std::span<const std::byte>> parts);  // XXH3-128 of the parts in turn, hex
std::string hash_bytes(std::span<const std::byte> bytes);  // BLAKE2b-256, hex
std::string hash_bytes(std::span<const std::span<const std::byte>> parts);  // of the parts one after another

}  // namespace arch::diloco
