// core/trainer.h: the inner training loop of one island on one device: batches from a DataLoader,
// gradient accumulation, global-norm clipping, AdamW under a warmup + cosine (or constant) schedule,
// validation, and save/resume of the full state (model checkpoint + CKPT.state beside it).
// It prints nothing: callers (the CLI, benches, DiLoCo islands) report the StepStats it returns.
#pragma once

#include <memory>
#include <string>

#include "core/adamw.h"
#include "core/data_loader.h"
#include "core/model.h"
#include "core/muon.h"
#include "core/named_enum.h"

namespace arch {

// The inner optimizer: AdamW, or Muon for the blocks' matmul weights (core/muon.h; its momentum is
// not saved) with AdamW for the rest. Named "adamw" and "muon" (run.toml's inner.optimizer).
enum class InnerOptimizer { adamw, muon };
const EnumNames<InnerOptimizer>& inner_optimizer_names();

struct TrainConfig {
    int B = 4;
    int T = 64;
    int grad_accum = 1;  // micro-batches per optimizer step
    int steps = 100;     // total optimizer steps (the schedule's length)
    LrSchedule schedule;
    AdamWConfig adamw;
    InnerOptimizer optimizer = InnerOptimizer::adamw;
    MuonConfig muon;
    uint64_t seed = 1337;
    DataOrder order = DataOrder::shuffled;
    std::string train_pattern;
    std::string val_pattern;  // empty: no validation
    int val_batches = 8;      // batches per validation, always the first ones of the val data
};

struct StepStats {
    int step = 0;  // 1-based index of the step just taken
    float loss = 0.0f;
    float lr = 0.0f;
    float grad_norm = 0.0f;
    double seconds = 0.0;
    double tokens_per_s = 0.0;
};

// Throws arch::Error naming the first setting that cannot work with this model (non-positive sizes,
// T above max T, no training data). Trainer and Island both check through it.
void check_train_config(const TrainConfig& config, const ModelConfig& model);

// Mean loss of `batches` batches of B x T read from loader's current position (val losses).
float mean_loss(Model& model, DataLoader& loader, int B, int T, int batches);

class Trainer {
public:
    // Checks that the config can work with this model and data (T <= max T, B*T+1 within a shard, ...).
    Trainer(Model& model, const TrainConfig& config);

    StepStats step();          // at the schedule's lr for steps_done()
    StepStats step(float lr);  // at a learning rate the caller chose (a DiLoCo island places its steps in the run's schedule)
    float evaluate();  // mean val loss over val_batches; throws if there is no val data
    int steps_done() const { return steps_done_; }
    bool has_val() const { return val_ != nullptr; }
    const TrainConfig& config() const { return config_; }

    // Writes the llm.c checkpoint at path and the run state at path + ".state".
    void save(const std::string& path);
    // Loads both (validating everything before changing anything).
    void resume(const std::string& path);

private:
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
