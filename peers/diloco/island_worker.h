// peers/diloco/island_worker.h: one island's side of a DiLoCo round: start from the global θ, run H
// inner AdamW steps on the island's own data, and encode the pseudo-gradient Δ = θ − θ_i with the
// uplink codec (its error-feedback residual persists across rounds, in place: what each Δ's rounding
// left, whether the host applied that Δ or not). Inner AdamW state stays here, except that DES-LOC rounds
// replace its moments with the islands' mean (get/set_adamw_state). The inner loop (core/inner_loop.h)
// is the plain Trainer on one device, on the CPU or one GPU ("cuda:N"), or an Island of several (CPU
// threads or GPUs: DDP or ZeRO-3, core/island.h) that trains each step together; the pseudo-gradient
// is encoded on the GPU (on one, or per shard on a ZeRO-3 island of them) when the codec allows it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/float_store.h"
#include "core/inner_loop.h"
#include "core/island.h"
#include "peers/diloco/model_factory.h"
#include "peers/rounds/local_steps.h"
#include "privacy/gaussian_mechanism.h"

namespace arch::diloco {

struct RoundResult {
    std::vector<std::byte> payload;  // the encoded pseudo-gradient
    double tokens = 0;               // tokens processed this round (the aggregation weight)
    float mean_loss = 0;             // mean inner training loss over the round
    int steps = 0;
    // Where the payload was encoded: "on the host", "on the GPU", or "per shard on N GPUs" (an
    // island of GPUs encodes each device's shard of Δ where it lives, never gathering θ_i).
    std::string encoded_on;
};

// What the host's round_start asks of an island (peers/peer.cpp fills it from the message).
struct RoundPlan {
    uint64_t round = 0;  // names the round's Δ for settle()
    int steps = 0;
    // Where the steps sit in the run's inner lr schedule (peers/rounds/local_steps.h); none: at the
    // island's own step count, the schedule's plain reading.
    std::optional<rounds::ScheduleSpan> schedule;
};

class IslandWorker {
public:
    IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec, int devices = 1,
                 Parallel parallel = Parallel::ddp, const std::string& device = "cpu",
                 const DeviceOptions& options = {});

    // Runs `steps` inner steps from theta; on_step (optional) sees each step's stats.
    RoundResult run_round(std::span<const float> theta, int steps,
                          const std::function<void(const StepStats&)>& on_step = {});
    // The same as the host asked for it: the learning rates placed by plan.schedule, and the Δ open
    // under plan.round until settle().
    RoundResult run_round(std::span<const float> theta, const RoundPlan& plan,
                          const std::function<void(const StepStats&)>& on_step = {});

    // The Δs sent and not yet settled, for the peer to say which ones the host did not apply (codecs
    // with +ef; docs/rounds.md). Applied or dropped, a Δ leaves the residual its rounding left: the
    // island keeps one residual, in place, and no copy of it to put back.
    void settle(uint64_t round);
    std::vector<uint64_t> unsettled() const;  // rounds of the Δs run_round(plan) encoded, not settled, oldest first
    void reset_residual();                    // a resync: error feedback starts afresh, nothing unsettled
    std::span<const float> residual() const { return residual_.values(); }  // the next Δ is encoded on it
    // The residual moves to a file created at path, memory-mapped (core/float_store.h), and stays there:
    // RAM the kernel can take back.
    void keep_residual_on_disk(const std::string& path);
    static constexpr std::size_t kMaxUnsettled = 4;  // rounds named by unsettled(); beyond it the oldest is forgotten
    // Streaming DiLoCo's pieces: run on from the island's current θ_i (no reset to θ), set θ_i, and
    // encode a fragment's Δ with the uplink codec (stream: the fragment, so each keeps its residual).
    RoundResult run_steps(int steps, const std::function<void(const StepStats&)>& on_step = {});  // no payload
    // The same, the learning rates placed by `placed` (the host's schedule positions of these steps).
    RoundResult run_steps(int steps, const rounds::ScheduleSpan& placed, const std::function<void(const StepStats&)>& on_step = {});
    void set_params(std::span<const float> theta);
    // Δ = θ − θ_i of the island's current θ_i encoded into r, as run_round ends; with error feedback,
    // round names the Δ for settle() (none: nothing to settle). Overlapped rounds send with it.
    void encode_round(std::span<const float> theta, RoundResult& r, std::optional<uint64_t> round);
    // delta is clipped and noised in place first when a privacy share is on.
    std::vector<std::byte> encode(std::span<float> delta, uint64_t stream);
    // Distributed differential privacy (privacy/gaussian_mechanism.h, docs/privacy.md): from now on
    // every Δ this island encodes is first clipped to `clip` in L2 and gets its share of the noise,
    // N(0, (sigma * clip)^2 / honest) per coordinate, so the error-feedback residual of the codec only
    // ever holds noised values. Δ is then gathered here, never encoded on a device.
    void add_privacy_share(double clip, double sigma, int honest);
    // The inner AdamW moments m and v, whole vectors (an island of several devices gathers and
    // scatters them). DES-LOC (outer.sync_moments_every) replaces them with the islands' mean; set
    // keeps the step count.
    void get_adamw_state(std::span<float> m, std::span<float> v);
    void set_adamw_state(std::span<const float> m, std::span<const float> v);
    // The same a slice at a time, where the engine can (else whole, once; core/inner_loop.h
    // read_slice): fn sees m's slices in order, then v's, each value once; fill writes each slice of
    // the new m and v (offset, m, v), and the engine takes it. No copy of the whole moments is made.
    using MomentSlice = std::function<void(StateVector which, std::size_t offset, std::span<const float> values)>;
    using MomentFill = std::function<void(std::size_t offset, std::span<float> m, std::span<float> v)>;
    void read_moments(const MomentSlice& fn);
    void write_moments(const MomentFill& fill);
    std::size_t num_params() const { return num_params_; }
    // Where a sent Δ's blob gives its memory back for the next encode (compression::Codec::recycler).
    std::function<void(std::vector<std::byte>&&)> payload_recycler() { return codec_->recycler(); }
    void get_params(std::span<float> out);  // the island's current θ_i
    int devices() const { return inner_->devices(); }

private:
    void add_share(std::span<float> delta);  // clipped and noised, when a privacy share is on
    RoundResult train(int steps, const rounds::ScheduleSpan* placed, const std::function<void(const StepStats&)>& on_step);
    // Δ = θ − θ_i formed and encoded where θ_i lives, on one GPU or per shard on an island of them;
    // false where the devices or the codec cannot (then the host encodes it).
    bool encode_on_devices(std::span<const float> theta, RoundResult& r);
    std::span<float> pseudo_gradient(std::span<const float> theta);         // Δ = θ − θ_i, in scratch_
    // y += θ − θ_i, a slice at a time; whether every value of y came out finite.
    bool add_pseudo_gradient(std::span<const float> theta, std::span<float> y);
    void fresh_residual();  // zeros, where error feedback starts (in RAM, or on disk)

    std::unique_ptr<InnerLoop> inner_;  // a Trainer on one device, or an Island of several
    std::unique_ptr<compression::Codec> codec_;
    std::size_t num_params_ = 0;
    // Error feedback of the rounds (codecs with +ef), kept here and not in the codec: residual_ gets
    // Δ added in place, a slice of θ_i at a time where the engine reads slices, and the encode leaves
    // in it what the Δ's rounding left out. A peer's DiLoCo state is then θ and residual_: 2 P
    // (docs/rounds.md, docs/run-config.md "Memory").
    FloatStore residual_;         // none yet: empty
    std::string residual_path_;  // on disk (keep_residual_on_disk), else empty
    // Δ whole, where it is needed: a codec without error feedback, a privacy share (clipped as a
    // whole), or an engine that cannot read θ_i a slice at a time (then it holds θ_i). Kept between
    // rounds, so that no round clears fresh pages for it.
    FloatStore scratch_;
    std::deque<uint64_t> open_;  // rounds of the Δs sent with error feedback, not yet settled
    struct PrivacyShare {
        double clip, sigma;
        int honest;
        privacy::NoiseSource noise;
    };
    std::unique_ptr<PrivacyShare> share_;  // distributed DP, else null
};

}  // namespace arch::diloco
