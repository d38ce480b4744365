// peers/diloco/island_worker.cpp: IslandWorker.
#include "peers/diloco/island_worker.h"

#include <iterator>

#include "core/error.h"
#include "peers/diloco/model_factory.h"

namespace arch::diloco {

IslandWorker::IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec, int devices,
                           Parallel parallel, const std::string& device, const DeviceOptions& options)
    : codec_(compression::make_codec(up_codec)), delta_(ParamLayout(model).num_params()) {
    if (devices < 1) throw Error("an island needs at least one device, got " + std::to_string(devices));
    if (devices == 1) {
        model_ = make_model(model, device, options);
        trainer_ = std::make_unique<Trainer>(*model_, train);
        return;
    }
    if (train.optimizer != "adamw")
        throw Error("inner.optimizer = \"" + train.optimizer + "\" runs on one device only; this island has " +
                    std::to_string(devices) + " (use adamw, or --devices 1)");
    island_ = make_island(model, train, devices, parallel, device, options);
}

void IslandWorker::get_params(std::span<float> out) {
    if (island_) island_->get_params(out);
    else model_->get_params(out);
}

void IslandWorker::get_adamw_state(std::span<float> m, std::span<float> v) {
    if (island_) island_->get_adamw_state(m, v);
    else model_->get_adamw_state(m, v);
}

void IslandWorker::set_adamw_state(std::span<const float> m, std::span<const float> v) {
    if (island_) island_->set_adamw_state(m, v);
    else model_->set_adamw_state(m, v, model_->adamw_steps());
}

void IslandWorker::set_params(std::span<const float> theta) {
    if (theta.size() != delta_.size())
        throw Error("global θ has " + std::to_string(theta.size()) + " parameters, the island's model " +
                    std::to_string(delta_.size()));
    if (island_) island_->set_params(theta);
    else model_->set_params(theta);
}

RoundResult IslandWorker::run_steps(int steps, const std::function<void(const StepStats&)>& on_step) {
    return train(steps, nullptr, on_step);
}

RoundResult IslandWorker::run_steps(int steps, const rounds::ScheduleSpan& placed,
                                    const std::function<void(const StepStats&)>& on_step) {
    return train(steps, &placed, on_step);
}

RoundResult IslandWorker::train(int steps, const rounds::ScheduleSpan* placed,
                                const std::function<void(const StepStats&)>& on_step) {
    RoundResult r;
    double loss_sum = 0;
    const TrainConfig& config = island_ ? island_->config() : trainer_->config();
    for (int s = 0; s < steps; ++s) {
        StepStats st;
        if (placed) {
            const uint64_t at = rounds::schedule_position(*placed, static_cast<uint32_t>(s), static_cast<uint32_t>(steps));
            const float lr = rounds::placed_lr(config.schedule, at, island_ ? island_->steps_done() : trainer_->steps_done());
            st = island_ ? island_->step(lr) : trainer_->step(lr);
        } else {
            st = island_ ? island_->step() : trainer_->step();
        }
        loss_sum += st.loss;
        if (on_step) on_step(st);
    }
    r.steps = steps;
    r.mean_loss = steps > 0 ? static_cast<float>(loss_sum / steps) : 0.0f;
    r.tokens = static_cast<double>(steps) * config.B * config.T * config.grad_accum * devices();
    return r;
}

RoundResult IslandWorker::run_round(std::span<const float> theta, int steps,
                                    const std::function<void(const StepStats&)>& on_step) {
    set_params(theta);
    RoundResult r = run_steps(steps, on_step);
    encode_round(theta, r);
    return r;
}

std::vector<std::byte> IslandWorker::encode(std::span<float> delta, uint64_t stream) {
    if (share_) {
        privacy::clip_l2(delta, share_->clip);
        privacy::add_island_share(delta, share_->clip, share_->sigma, share_->honest, share_->noise);
    }
    return codec_->encode(delta, stream);
}

void IslandWorker::add_privacy_share(double clip, double sigma, int honest) {
    if (!(clip > 0) || !(sigma >= 0) || honest < 1)
        throw Error("a privacy share needs clip > 0, sigma >= 0 and honest >= 1");
    share_ = std::make_unique<PrivacyShare>(PrivacyShare{clip, sigma, honest, {}});
}

void IslandWorker::encode_round(std::span<const float> theta, RoundResult& r) {
    const bool on_devices = !share_;  // a privacy share is added here, to the whole Δ
    if (on_devices && model_) {
        if (auto on_device = encode_delta_on_device(*model_, theta, codec_->spec())) {
            r.payload = std::move(*on_device);
            r.encoded_on = "on the GPU";
            return;
        }
    } else if (on_devices) {
        if (auto per_shard = encode_delta_on_island(*island_, theta, codec_->spec())) {
            r.payload = std::move(*per_shard);
            r.encoded_on = "per shard on " + std::to_string(island_->devices()) + " GPUs";
            return;
        }
    }
    get_params(delta_);
    for (std::size_t i = 0; i < delta_.size(); ++i) delta_[i] = theta[i] - delta_[i];
    r.payload = encode(delta_, 0);
    r.encoded_on = share_ ? "on the host, clipped and noised" : "on the host";
}

RoundResult IslandWorker::run_round(std::span<const float> theta, const RoundPlan& plan,
                                    const std::function<void(const StepStats&)>& on_step) {
    set_params(theta);
    RoundResult r = train(plan.steps, plan.schedule ? &*plan.schedule : nullptr, on_step);
    const std::span<const float> before = codec_->residual(0);
    const bool ef = codec_->settings().error_feedback;  // else there is nothing to put back
    if (ef) {
        std::vector<float> copy;
        if (!spare_residuals_.empty()) {
            copy = std::move(spare_residuals_.back());
            spare_residuals_.pop_back();
        }
        copy.assign(before.begin(), before.end());
        unsettled_.push_back({plan.round, std::move(copy)});
    }
    try {
        encode_round(theta, r);
    } catch (...) {  // nothing was sent (a non-finite Δ): the residual is unchanged
        if (ef) {
            recycle(std::move(unsettled_.back().residual));
            unsettled_.pop_back();
        }
        throw;
    }
    while (unsettled_.size() > kMaxUnsettled) {
        recycle(std::move(unsettled_.front().residual));
        unsettled_.pop_front();
    }
    return r;
}

bool IslandWorker::settle(uint64_t round, bool applied) {
    // The newest Δ of that round (a round started again can have been sent twice; the first was
    // settled by the round_start that started it again).
    auto it = unsettled_.end();
    while (it != unsettled_.begin()) {
        --it;
        if (it->round != round) continue;
        const bool newest = std::next(it) == unsettled_.end();
        if (!applied && newest) codec_->set_residual(0, it->residual);
        recycle(std::move(it->residual));
        unsettled_.erase(it);
        return applied || newest;
    }
    return true;  // nothing kept for it (no error feedback, or settled already)
}

std::vector<uint64_t> IslandWorker::unsettled() const {
    std::vector<uint64_t> rounds;
    for (const Unsettled& u : unsettled_) rounds.push_back(u.round);
    return rounds;
}

void IslandWorker::reset_residual() {
    codec_->reset(0);
    for (Unsettled& u : unsettled_) recycle(std::move(u.residual));
    unsettled_.clear();
}

void IslandWorker::recycle(std::vector<float>&& residual) {
    // One spare is what a sync round needs (its Δ settled before the next is encoded); more would
    // hold memory that a burst of unsettled rounds once asked for.
    if (spare_residuals_.empty()) spare_residuals_.push_back(std::move(residual));
}

}  // namespace arch::diloco
