// peers/diloco/global_model.h: the global state of a DiLoCo run, held identically by the host and
// every island: θ (fp32, host memory) and the rule that turns a round's update bytes into the next θ.
// The host alone holds the outer optimizer: it aggregates the islands' pseudo-gradients, takes the
// outer step and encodes the change of θ with the downlink codec; everyone, host included, decodes
// the same bytes and adds them to θ, so all end the round with bit-identical θ, checked by hash(). An
// island's replica holds θ and the count of updates and nothing else: the protocol needs no outer
// state there, and a joiner's state is θ alone.
// Streaming DiLoCo: θ in P fragments (peers/diloco/fragments.h), each with its own outer optimizer
// and its own updates; with one fragment (the default) it is plain DiLoCo.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "compression/held_payload.h"
#include "core/digest.h"
#include "core/named_enum.h"
#include "core/float_store.h"
#include "outer_optimizer/aggregator.h"
#include "outer_optimizer/outer_optimizer.h"
#include "peers/diloco/fragments.h"
#include "outer_optimizer/screening.h"

namespace arch::diloco {

// The outer optimizer (outer_optimizer/): Nesterov momentum, plain averaging (θ minus the mean Δ), or
// Delayed Nesterov (async mode: momentum every `period` updates). Named "nesterov", "average" and
// "delayed-nesterov" (run.toml's outer.optimizer).
enum class OuterOptimizerKind { nesterov, average, delayed_nesterov };
const EnumNames<OuterOptimizerKind>& outer_optimizer_names();

struct OuterConfig {
    OuterOptimizerKind optimizer = OuterOptimizerKind::nesterov;
    float lr = 0.7f;
    float momentum = 0.9f;
    uint32_t period = 1;                 // delayed-nesterov: momentum every `period` updates
    std::string aggregator = "mean";     // outer_optimizer/aggregator.h spec
    std::string down_codec = "fp32";     // how the aggregated update travels to the islands
    outer::ScreenPolicy::Action screen = outer::ScreenPolicy::Action::clip;  // a Δ far above the round's median norm
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
    // host: the outer optimizer too (make_update); replica: θ and the count of updates only.
    enum class Holder { host, replica };
    // fragments: empty is one fragment, the whole vector; otherwise they must cover θ exactly once.
    // theta: in RAM (a vector), or on disk (FloatStore::on_disk: a peer's --state-on-disk).
    GlobalModel(FloatStore theta, const OuterConfig& config, std::vector<Fragment> fragments = {},
                Holder holder = Holder::host);

    std::span<const float> theta() const { return theta_->values(); }
    bool theta_on_disk() const { return theta_->is_on_disk(); }
    void release_theta() const { theta_->release(); }  // on disk: its pages back to the page cache
    // θ as it is now, for a reader on another thread (the host's checkpoint writer): it stays as it is
    // while held. θ is copied on write: the next change of θ while a reader holds it gives the model
    // a copy of its own to change, and the reader's is freed when it lets go. So a checkpoint needs no
    // copy of θ unless its write is still under way when θ next changes. θ in RAM only.
    std::shared_ptr<const FloatStore> theta_snapshot() const;
    uint64_t theta_copies() const { return theta_copies_; }  // how often a change of θ found it held
    uint64_t updates_applied() const;                 // over all fragments
    uint64_t updates_applied(int fragment) const;
    int fragments() const { return static_cast<int>(fragments_.size()); }
    const Fragment& fragment(int p) const { return fragments_.at(static_cast<std::size_t>(p)); }
    float next_lr(int fragment = 0) const;  // the outer lr the fragment's next update is applied with

    // Host: aggregates one round's pseudo-gradients of a fragment (each fragment(p).size floats; give
    // them in a canonical order), takes the outer step (the optimizer's state moves) and encodes the
    // change of θ into update bytes, which apply_update then adds to θ. Throws arch::Error, with the
    // optimizer unchanged, for a step that would make θ non-finite. Where the downlink codec's rounding
    // would carry θ past fp32's range, the change goes out in fp32.
    std::vector<std::byte> make_update(std::span<const outer::WeightedDelta> contributions, int fragment = 0);
    // Host, with Δs held encoded: the update make_update gives for them decoded whole, each times its
    // scale (a screen's clip), bit for bit, aggregated slice by slice so that no Δ is ever decoded
    // whole. Only for an aggregator that works per coordinate (aggregates_per_coordinate()).
    struct HeldDelta {
        const compression::HeldPayload* payload = nullptr;
        double tokens = 1.0;
        float scale = 1.0f;
        float limit = 0.0f;  // > 0: each value (after scale) clamped to ±limit, as outer::clamp_values does
    };
    std::vector<std::byte> make_update(std::span<const HeldDelta> held, int fragment = 0);
    // The same two, the aggregate kept in `scratch` (at least the fragment's size) rather than in a
    // buffer of the model's own: a host lends the memory that becomes its next state (peers/host.cpp).
    std::vector<std::byte> make_update(std::span<const outer::WeightedDelta> contributions, int fragment,
                                       std::span<float> scratch);
    std::vector<std::byte> make_update(std::span<const HeldDelta> held, int fragment, std::span<float> scratch);
    // make_update's two halves for held Δs, so a host can judge them on what the aggregation pass saw
    // before the outer step: the aggregate into scratch, and with `seen` (one per Δ) the sum of the
    // squares of each Δ's values as decoded (before its scale) and the count its clamp cut; then the step.
    struct Seen {
        outer::SquareSum squares;
        uint64_t beyond = 0;
    };
    void aggregate_held(std::span<const HeldDelta> held, int fragment, std::span<float> scratch, std::span<Seen> seen = {});
    std::vector<std::byte> step_and_encode(int fragment, std::span<float> aggregate);  // the aggregate in, the change out
    // Where an update's blob gives its memory back for the next step_and_encode (compression::Codec::recycler).
    std::function<void(std::vector<std::byte>&&)> update_recycler() { return down_codec_->recycler(); }
    bool aggregates_per_coordinate() const { return aggregator_ && aggregator_->per_coordinate(); }
    // Everyone: decodes update bytes (the change of the fragment's θ) and adds them, a slice at a time.
    // Validates first (size, codec, NaN/Inf) and that θ stays finite: on error throws arch::Error and θ
    // is unchanged.
    void apply_update(std::span<const std::byte> update, int fragment = 0);

    std::string hash() const;  // hash_floats(θ), computed once per θ
    std::string fragment_hash(int p) const;                 // of the fragment's floats, in range order
    void fragment_theta(int p, std::span<float> out) const;  // gathers them

    // What a replica needs, for late joiners: uint64 n, n floats of θ, then each fragment's update count.
    std::size_t replica_state_bytes() const;
    void save_replica_state(std::span<std::byte> out) const;  // exactly replica_state_bytes(), in place
    struct ReplicaState {  // the same bytes as three pieces: θ's are θ itself, shared (copy on write)
        std::vector<std::byte> head;                // uint64 n
        std::shared_ptr<const FloatStore> theta;    // n floats
        std::vector<std::byte> tail;                // the fragments' update counts
        std::span<const std::byte> theta_bytes() const;
    };
    ReplicaState replica_state() const;  // the host's θ, in RAM
    void load_replica_state(std::span<const std::byte> bytes);
    // The same from blob[at...], θ taken over where it lies in the blob (not copied) unless θ is kept
    // on disk or its floats are not aligned there.
    void load_replica_state(std::vector<std::byte> blob, std::size_t at);
    // The host's checkpoint: uint64 n, n floats of θ (the replica state's start), then the outer state.
    std::vector<std::byte> save_state() const;
    std::size_t state_bytes() const;
    void save_state(std::span<std::byte> out) const;  // exactly state_bytes(): into a blob, in place
    // The outer state alone (what follows θ in save_state), for a checkpoint that takes θ elsewhere.
    std::size_t outer_state_bytes() const;
    void save_outer_state(std::span<std::byte> out) const;
    // The same bytes handed to put in order, the momentum as views of the optimizer's own buffers: a
    // checkpoint writes them where they lie, with no copy of the state (host only).
    void write_outer_state(const std::function<void(std::span<const std::byte>)>& put) const;
    void load_state(std::span<const std::byte> bytes);  // host only

private:
    void require_host(const char* what) const;
    FloatStore& theta_to_change();  // θ, copied first when a snapshot of it is held
    ReplicaState replica_state(std::shared_ptr<const FloatStore> theta) const;
    void take_replica_state(std::span<const std::byte> bytes, std::vector<std::byte>* blob, std::size_t at);

    OuterConfig config_;
    std::shared_ptr<FloatStore> theta_;
    uint64_t theta_copies_ = 0;
    float theta_bound_ = -1.0f;  // at least the largest |θ| (< 0: not known): apply_update's one-pass test
    std::vector<Fragment> fragments_;
    std::vector<uint64_t> applied_;  // updates applied, one count per fragment
    // Host only (a replica holds none of these):
    std::vector<std::unique_ptr<outer::OuterOptimizer>> optimizers_;  // one per fragment
    std::unique_ptr<outer::Aggregator> aggregator_;
    std::unique_ptr<compression::Codec> down_codec_;
    std::vector<float> scratch_;  // the aggregate, then the change of θ, reused every round (unless lent one)
    std::vector<float> params_;   // a fragment's θ, gathered (several fragments only)
    struct ThreadSlices {
        std::vector<std::vector<float>> values;  // one slice of each held Δ, decoded
        std::vector<std::byte> codes;            // its codes, put together to decode
    };
    std::vector<ThreadSlices> slices_;  // per thread of aggregate_held, kept from round to round
    std::vector<float> slice_;  // one slice of an update, decoded (apply_update)
    std::vector<std::byte> update_payload_;  // an update's payload out of its zstd stage (the host; a replica: other codecs than blockwise), its memory kept for the next
    mutable std::string hash_;  // of theta_; empty after θ changes
};

std::string hash_floats(std::span<const float> values);  // XXH3-128, hex (32 characters)
std::string checksum(std::span<const std::span<const std::byte>> parts);  // XXH3-128 of the parts in turn, hex
// The same checksum taken as the parts come (add them in order, then hex()).
class Checksum {
public:
    void add(std::span<const std::byte> part);
    std::string hex() const;

private:
    DigestStream stream_;
};
std::string hash_bytes(std::span<const std::byte> bytes);  // BLAKE2b-256, hex
std::string hash_bytes(std::span<const std::span<const std::byte>> parts);  // of the parts one after another

}  // namespace arch::diloco
