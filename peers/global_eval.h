// peers/global_eval.h: the host's validation loss of the global θ after each update (the round row's
// val_loss): the run's model on the CPU backend, reading θ where it lies (no copy of the parameters,
// and no gradients), over the first run.val_batches batches of the validation split. No split: -1.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/backend.h"
#include "core/model_config.h"
#include "core/param_store.h"
#include "core/transformer.h"
#include "peers/run_config.h"

namespace arch {

class GlobalEval {
public:
    // `val_pattern`: the validation shards ("" for none). `config` outlives this.
    GlobalEval(const RunConfig& config, const ModelConfig& model, std::string val_pattern);
    float loss(std::span<const float> theta);

private:
    const RunConfig& config_;
    std::string val_pattern_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<ViewParamStore> params_;  // θ, in place
    std::unique_ptr<Transformer> model_;
};

}  // namespace arch
