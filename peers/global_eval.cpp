// peers/global_eval.cpp: GlobalEval.
#include "peers/global_eval.h"

#include "core/data_loader.h"
#include "core/trainer.h"
#include "kernels/cpu/cpu_backend.h"

namespace arch {

GlobalEval::GlobalEval(const RunConfig& config, const ModelConfig& model, std::string val_pattern)
    : config_(config), val_pattern_(std::move(val_pattern)) {
    backend_ = make_cpu_backend();
    params_ = std::make_unique<ViewParamStore>(ParamLayout(model));
    model_ = make_transformer(model, *backend_, params_.get());
}

float GlobalEval::loss(std::span<const float> theta) {
    if (val_pattern_.empty()) return -1.0f;
    params_->view(theta);
    DataLoader val(val_pattern_, config_.batch, config_.seq_len, DataOrder::sequential, 0);
    return mean_loss(*model_, val, config_.batch, config_.seq_len, config_.val_batches);
}

}  // namespace arch
