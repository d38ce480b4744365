// core/trainer.cpp: Trainer: one optimizer step = grad_accum forward/backward passes, then AdamW.
#include "core/trainer.h"

#include <chrono>
#include <cmath>

#include "core/checkpoint.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/run_state.h"

namespace arch {

void check_train_config(const TrainConfig& config, const ModelConfig& model) {
    if (config.B <= 0 || config.T <= 0 || config.grad_accum <= 0 || config.steps <= 0)
        throw Error("train config: B, T, grad accumulation and steps must be positive");
    if (config.T > model.max_seq_len)
        throw Error("sequence length T=" + std::to_string(config.T) + " exceeds the model's max T=" +
                    std::to_string(model.max_seq_len));
    if (config.train_pattern.empty()) throw Error("train config: no training data given");
}

float mean_loss(Model& model, DataLoader& loader, int B, int T, int batches) {
    std::vector<int> inputs(static_cast<std::size_t>(B) * T), targets(inputs.size());
    double sum = 0.0;
    for (int i = 0; i < batches; ++i) {
        loader.next_batch(inputs.data(), targets.data());
        sum += model.forward(inputs.data(), targets.data(), B, T);
    }
    return static_cast<float>(sum / batches);
}

Trainer::Trainer(Model& model, const TrainConfig& config) : model_(model), config_(config) {
    const ModelConfig& mc = model.config();
    check_train_config(config, mc);
    train_ = std::make_unique<DataLoader>(config.train_pattern, config.B, config.T, config.order, config.seed,
                                          mc.vocab_size);
    if (!config.val_pattern.empty())
        val_ = std::make_unique<DataLoader>(config.val_pattern, config.B, config.T, DataOrder::sequential, 0,
                                            mc.vocab_size);
    if (val_) val_start_ = val_->cursor();
    if (config.optimizer == InnerOptimizer::muon) muon_ = std::make_unique<Muon>(ParamLayout(mc), config.muon);
    inputs_.resize(static_cast<std::size_t>(config.B) * config.T);
    targets_.resize(inputs_.size());
}

Trainer::Trainer(std::unique_ptr<Model> model, const TrainConfig& config) : Trainer(*model, config) {
    owned_ = std::move(model);
}

StepStats Trainer::step(float lr) {
    const auto t0 = Clock::real().now();
    model_.zero_grad();
    double loss_sum = 0.0;
    for (int micro = 0; micro < config_.grad_accum; ++micro) {
        train_->next_batch(inputs_.data(), targets_.data());
        loss_sum += model_.forward(inputs_.data(), targets_.data(), config_.B, config_.T);
        model_.backward(1.0f / static_cast<float>(config_.grad_accum));
    }
    StepStats s;
    s.loss = static_cast<float>(loss_sum / config_.grad_accum);
    if (!std::isfinite(s.loss))
        throw Error("training diverged at step " + std::to_string(steps_done_ + 1) + ": loss is " +
                    std::to_string(s.loss) + " (try a lower --lr)");
    s.lr = lr;
    if (muon_) {  // AdamW steps every tensor, then Muon redoes the matmul weights' step from θ before it
        before_.resize(model_.num_params());
        grads_.resize(before_.size());
        after_.resize(before_.size());
        model_.get_params(before_);
        model_.get_grads(grads_);
        s.grad_norm = model_.adamw_step(s.lr, config_.adamw);
        model_.get_params(after_);
        muon_->step(after_, before_, grads_, s.lr, config_.adamw.weight_decay);
        model_.set_params(after_);
    } else {
        s.grad_norm = model_.adamw_step(s.lr, config_.adamw);
    }
    s.step = ++steps_done_;
    s.seconds = std::chrono::duration<double>(Clock::real().now() - t0).count();
    s.tokens_per_s = static_cast<double>(config_.B) * config_.T * config_.grad_accum / s.seconds;
    return s;
}

float Trainer::evaluate() {
    if (val_ == nullptr) throw Error("evaluate: no validation data");
    val_->seek(val_start_);
    return mean_loss(model_, *val_, config_.B, config_.T, config_.val_batches);
}

void Trainer::save(const std::string& path) {
    if (muon_) throw Error("save: Muon's momentum is not saved with a checkpoint (core/muon.h)");
    std::vector<float> params(model_.num_params());
    model_.get_params(params);
    RunState state;
    state.step = steps_done_;
    state.train_cursor = train_->cursor();
    state.m.resize(model_.num_params());
    state.v.resize(model_.num_params());
    model_.get_adamw_state(state.m, state.v);
    write_checkpoint(path, model_.config(), params);
    write_run_state(path + ".state", state);
}

void Trainer::resume(const std::string& path) {
    if (muon_) throw Error("resume: Muon's momentum is not saved with a checkpoint (core/muon.h)");
    const std::vector<float> params = read_checkpoint_params(path, model_.config());
    const RunState state = read_run_state(path + ".state", model_.num_params());
    if (state.step > config_.steps)
        throw Error("run state '" + path + ".state' is at step " + std::to_string(state.step) +
                    ", beyond the configured " + std::to_string(config_.steps) + " steps");
    train_->seek(state.train_cursor);  // validates before anything else changes
    model_.set_params(params);
    model_.set_adamw_state(state.m, state.v, state.step);
    steps_done_ = state.step;
}

}  // namespace arch
