// peers/diloco/island_worker.h: one island's side of a DiLoCo round: start from the global θ, run H
// inner AdamW steps on the island's own data, and encode the pseudo-gradient Δ = θ − θ_i with the
// uplink codec (its error-feedback residual persists across rounds). Inner AdamW state stays here
// and is never exchanged.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compression/codec.h"
#include "core/backend.h"
#include "core/gpt2.h"
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
    IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec);

    // Runs `steps` inner steps from theta; on_step (optional) sees each step's stats.
    RoundResult run_round(std::span<const float> theta, int steps,
                          const std::function<void(const StepStats&)>& on_step = {});
    GPT2& model() { return *model_; }
    Trainer& trainer() { return *trainer_; }

private:
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<GPT2> model_;
    std::unique_ptr<Trainer> trainer_;
    std::unique_ptr<compression::Codec> codec_;
    std::vector<float> delta_;
};

}  // namespace arch::diloco
