// core/trainer.h: the inner training loop of one island on one device (an InnerLoop, core/inner_loop.h):
// batches from a DataLoader, gradient accumulation, global-norm clipping, AdamW under a warmup +
// cosine (or constant) schedule, validation, and save/resume of the full state (model checkpoint +
// CKPT.state beside it). It prints nothing: callers (the CLI, benches, DiLoCo islands) report the
// StepStats it returns.
#pragma once

#include <memory>
#include <string>

#include "core/data_loader.h"
#include "core/inner_loop.h"
#include "core/model.h"
#include "core/muon.h"

namespace arch {

// Throws arch::Error naming the first setting that cannot work with this model (non-positive sizes,
// T above max T, no training data). Trainer and Island both check through it.
void check_train_config(const TrainConfig& config, const ModelConfig& model);

// Mean loss of `batches` batches of B x T read from loader's current position (val losses).
float mean_loss(Model& model, DataLoader& loader, int B, int T, int batches);

class Trainer final : public InnerLoop {
public:
    // Checks that the config can work with this model and data (T <= max T, B*T+1 within a shard, ...).
    Trainer(Model& model, const TrainConfig& config);
    // The same, owning the model (make_inner_loop's one device).
    Trainer(std::unique_ptr<Model> model, const TrainConfig& config);

    using InnerLoop::step;
    StepStats step(float lr) override;
    float evaluate() override;
    int steps_done() const override { return steps_done_; }
    bool has_val() const override { return val_ != nullptr; }
    const TrainConfig& config() const override { return config_; }
    std::size_t num_params() const override { return model_.num_params(); }
    int devices() const override { return 1; }

    void init_weights(std::uint64_t seed) override { model_.init_weights(seed); }
    void get_params(std::span<float> full) override { model_.get_params(full); }
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        return model_.read_slice(which, offset, out);
    }
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override {
        return model_.write_moments_slice(offset, m, v);
    }
    void set_params(std::span<const float> full) override { model_.set_params(full); }
    void get_adamw_state(std::span<float> m, std::span<float> v) override { model_.get_adamw_state(m, v); }
    void set_adamw_state(std::span<const float> m, std::span<const float> v) override {
        model_.set_adamw_state(m, v, model_.adamw_steps());
    }

    // Writes the llm.c checkpoint at path and the run state at path + ".state".
    void save(const std::string& path) override;
    // Loads both (validating everything before changing anything).
    void resume(const std::string& path) override;

    Model* single_model() override { return &model_; }

private:
    std::unique_ptr<Model> owned_;  // the model, when this trainer owns it
    Model& model_;
    TrainConfig config_;
    std::unique_ptr<DataLoader> train_;
    std::unique_ptr<DataLoader> val_;
    DataCursor val_start_;  // every validation reads the same batches from here
    std::unique_ptr<Muon> muon_;  // optimizer = muon
    std::vector<float> before_, grads_, after_;
    std::vector<int> inputs_, targets_;
    int steps_done_ = 0;
};

}  // namespace arch
