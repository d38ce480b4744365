// peers/moment_sync.h: DES-LOC in the host (run.toml outer.sync_moments_every = K; docs/rounds.md,
// "DES-LOC"): in every K-th sync round each island sends its inner AdamW moments m and v just before
// its Δ; the host keeps them until the round's update, which carries their token-weighted mean over
// the islands whose Δ it used. It sees no network and no model: the host hands it checked facts and
// blobs. Memory: one set of moments as they came (bf16: one model size of fp32, P) per admitted
// island, until the update; their mean is written straight into the update, a slice at a time.
// Finite moments can still lie. What AdamW itself guarantees is checked on arrival, with no reference
// needed (core/inner_loop.h, adamw_moment_ratio_bound): every value's |m_i| ≤ k √v_i, so no mean of
// such moments can make a step longer than AdamW's bound, and with gradients clipped to c, ‖m‖ ≤ c and
// Σ v_i ≤ c². Then each island's ‖m‖ and ‖v‖ are screened as Δs are (outer.screen_factor × the median
// of the round, or of recent rounds: outer_optimizer/screening.h), and one far above is left out of
// the mean, so one island cannot swamp every island's optimizer state.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/adamw.h"
#include "outer_optimizer/screening.h"
#include "peers/diloco/global_model.h"
#include "peers/rounds/round_policy.h"

namespace arch {

struct RunConfig;  // peers/run_config.h

// Whether `round` carries moments: K > 0 and round + 1 a multiple of K (rounds K − 1, 2K − 1, ...,
// as bench_convergence's --desloc). run_config.cpp leaves K at 0 outside sync mode.
bool moments_round(const RunConfig& c, uint64_t round);
bool moments_round(int every, uint64_t round);  // the same with K given

// BLAKE2b-256 of the hex XXH3-128 hashes of m's and v's fp32 bytes (diloco::hash_floats): what host
// and islands log, of the mean as an island holds it (its bf16 values widened to fp32).
std::string moments_hash(std::span<const float> m, std::span<const float> v);
// The same hash taken as slices of m and v come (each vector's slices in order).
class MomentsHash {
public:
    void add(StateVector which, std::span<const float> values);
    std::string hex() const;

private:
    diloco::Checksum m_, v_;
};

class MomentPool {
public:
    MomentPool(const RunConfig& config, std::size_t params);

    // A `moments` blob from the island `key`, started on `started_round` and not answered yet with
    // its Δ (`awaiting_delta`), while the host is at round `round`. Throws the reason to refuse it,
    // holding nothing: a round that carries no moments, another round than the island's and the
    // one in progress, moments after the Δ or twice, a wrong size, a non-finite m or v, a negative v,
    // an m that AdamW could not have made of that v, or moments beyond what clipped gradients allow.
    void accept(const std::string& key, std::vector<std::byte> blob, bool awaiting_delta, uint64_t started_round,
                uint64_t round);
    void drop(const std::string& key);  // a new round_start for it (what it sent is stale), or it was revoked

    struct Mean {
        std::vector<uint32_t> islands;  // whose moments it holds, increasing; empty: none arrived
        std::string hash;               // moments_hash of the mean, once written
        std::vector<std::string> left_out;  // "island I: ‖v‖ N above L": screened out, for the host's log
        std::vector<std::pair<std::string, float>> weights;  // by key, in island order: what write() adds up
    };
    // The update of `round` used `used` (after screening): which islands' moments its mean holds,
    // those trained on `round` that sent theirs, each weighted by the tokens its Δ counted for, and
    // screened. With none, forgets everything held.
    Mean choose(std::span<const rounds::Contribution> used, uint64_t round);
    // Writes their mean as the moments blob of `round` into `out` (protocol::moments_bytes(params)):
    // summed in fp32 in island order, the same sum on any host, and rounded to bf16 once. Sets
    // mean.hash and forgets everything held.
    void write(Mean& mean, uint64_t round, std::span<std::byte> out);

private:
    struct Held {
        uint64_t round = 0;
        std::vector<std::byte> blob;  // as it came: its header, then m and v in bf16
        double m_norm = 0, v_norm = 0;
    };
    int every_;  // K
    outer::NormScreen screen_m_, screen_v_;
    double ratio_;  // k in |m_i| ≤ k √v_i (0: not checked: no bound, or Muon, whose m is its own)
    double clip_;   // the islands' gradient clip c (0: off)
    std::size_t params_;
    std::map<std::string, Held> held_;  // by island key, at most one each
};

}  // namespace arch
