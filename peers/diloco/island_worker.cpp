// peers/diloco/island_worker.cpp: IslandWorker.
#include "peers/diloco/island_worker.h"

#include "core/error.h"
#include "peers/diloco/model_factory.h"

namespace arch::diloco {

IslandWorker::IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec, int devices,
                           Parallel parallel, const std::string& device)
    : codec_(compression::make_codec(up_codec)), delta_(ParamLayout(model).num_params()) {
    if (devices < 1) throw Error("an island needs at least one device, got " + std::to_string(devices));
    if (devices == 1) {
        model_ = make_model(model, device);
        trainer_ = std::make_unique<Trainer>(*model_, train);
        return;
    }
    island_ = make_island(model, train, devices, parallel, device);
}

void IslandWorker::get_params(std::span<float> out) {
    if (island_) island_->get_params(out);
    else model_->get_params(out);
}

void IslandWorker::set_params(std::span<const float> theta) {
    if (theta.size() != delta_.size())
        throw Error("global θ has " + std::to_string(theta.size()) + " parameters, the island's model " +
                    std::to_string(delta_.size()));
    if (island_) island_->set_params(theta);
    else model_->set_params(theta);
}

RoundResult IslandWorker::run_steps(int steps, const std::function<void(const StepStats&)>& on_step) {
    RoundResult r;
    double loss_sum = 0;
    for (int s = 0; s < steps; ++s) {
        const StepStats st = island_ ? island_->step() : trainer_->step();
        loss_sum += st.loss;
        if (on_step) on_step(st);
    }
    r.steps = steps;
    r.mean_loss = steps > 0 ? static_cast<float>(loss_sum / steps) : 0.0f;
    const TrainConfig& c = island_ ? island_->config() : trainer_->config();
    r.tokens = static_cast<double>(steps) * c.B * c.T * c.grad_accum * devices();
    return r;
}

RoundResult IslandWorker::run_round(std::span<const float> theta, int steps,
                                    const std::function<void(const StepStats&)>& on_step) {
    set_params(theta);
    RoundResult r = run_steps(steps, on_step);
    if (model_) {
        if (auto on_device = encode_delta_on_device(*model_, theta, codec_->spec())) {
            r.payload = std::move(*on_device);
            return r;
        }
    }
    get_params(delta_);
    for (std::size_t i = 0; i < delta_.size(); ++i) delta_[i] = theta[i] - delta_[i];
    r.payload = codec_->encode(delta_, 0);
    return r;
}

}  // namespace arch::diloco
