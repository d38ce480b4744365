// peers/diloco/island_worker.h: one island's side of a DiLoCo round: start from the global θ, run H
// inner AdamW steps on the island's own data, and encode the pseudo-gradient Δ = θ − θ_i with the
// uplink codec (its error-feedback residual persists across rounds). Inner AdamW state stays here
// and is never exchanged. An island of several devices (CPU threads: DDP or ZeRO-3, core/island.h)
// trains each step together; one device uses the plain Trainer, on the CPU or one GPU ("cuda:N"),
// where the pseudo-gradient is also encoded on the GPU when the codec allows it.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/island.h"
#include "core/model.h"
#include "core/trainer.h"

namespace arch::diloco {

struct RoundResult {
    std::vector<std::byte> payload;  // the encoded pseudo-gradient
    double tokens = 0;               // tokens processed this round (the aggregation weight)
    float mean_loss = 0;             // mean inner training loss over the round
    int steps = 0;
};

class IslandWorker {
public:
    IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec, int devices = 1,
                 Parallel parallel = Parallel::ddp, const std::string& device = "cpu");

    // Runs `steps` inner steps from theta; on_step (optional) sees each step's stats.
    RoundResult run_round(std::span<const float> theta, int steps,
                          const std::function<void(const StepStats&)>& on_step = {});
    // Streaming DiLoCo's pieces: run on from the island's current θ_i (no reset to θ), set θ_i, and
    // encode a fragment's Δ with the uplink codec (stream: the fragment, so each keeps its residual).
    RoundResult run_steps(int steps, const std::function<void(const StepStats&)>& on_step = {});  // no payload
    void set_params(std::span<const float> theta);
    std::vector<std::byte> encode(std::span<const float> delta, uint64_t stream) { return codec_->encode(delta, stream); }
    std::size_t num_params() const { return delta_.size(); }
    void get_params(std::span<float> out);  // the island's current θ_i
    int devices() const { return island_ ? island_->devices() : 1; }

private:
    std::unique_ptr<Model> model_;
    std::unique_ptr<Trainer> trainer_;  // one device
    std::unique_ptr<Island> island_;    // or several
    std::unique_ptr<compression::Codec> codec_;
    std::vector<float> delta_;
};

}  // namespace arch::diloco
