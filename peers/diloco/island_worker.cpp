// peers/diloco/island_worker.cpp: IslandWorker.
#include "peers/diloco/island_worker.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "core/error.h"
#include "peers/diloco/model_factory.h"

namespace arch::diloco {

IslandWorker::IslandWorker(const ModelConfig& model, const TrainConfig& train, const std::string& up_codec, int devices,
                           Parallel parallel, const std::string& device, const DeviceOptions& options)
    : codec_(compression::make_codec(up_codec)), num_params_(ParamLayout(model).num_params()) {
    inner_ = make_inner_loop(model, train, devices, parallel, device, options);
}

void IslandWorker::get_params(std::span<float> out) { inner_->get_params(out); }

void IslandWorker::get_adamw_state(std::span<float> m, std::span<float> v) { inner_->get_adamw_state(m, v); }

void IslandWorker::set_adamw_state(std::span<const float> m, std::span<const float> v) {
    inner_->set_adamw_state(m, v);
}

void IslandWorker::set_params(std::span<const float> theta) {
    if (theta.size() != num_params_)
        throw Error("global θ has " + std::to_string(theta.size()) + " parameters, the island's model " +
                    std::to_string(num_params_));
    inner_->set_params(theta);
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
    const TrainConfig& config = inner_->config();
    for (int s = 0; s < steps; ++s) {
        StepStats st;
        if (placed) {
            const uint64_t at = rounds::schedule_position(*placed, static_cast<uint32_t>(s), static_cast<uint32_t>(steps));
            st = inner_->step(rounds::placed_lr(config.schedule, at, inner_->steps_done()));
        } else {
            st = inner_->step();
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
    encode_round(theta, r, std::nullopt);
    return r;
}

std::vector<std::byte> IslandWorker::encode(std::span<float> delta, uint64_t stream) {
    add_share(delta);
    return codec_->encode(delta, stream);
}

void IslandWorker::add_share(std::span<float> delta) {
    if (!share_) return;
    privacy::clip_l2(delta, share_->clip);
    privacy::add_island_share(delta, share_->clip, share_->sigma, share_->honest, share_->noise);
}

void IslandWorker::add_privacy_share(double clip, double sigma, int honest) {
    if (!(clip > 0) || !(sigma >= 0) || honest < 1)
        throw Error("a privacy share needs clip > 0, sigma >= 0 and honest >= 1");
    share_ = std::make_unique<PrivacyShare>(PrivacyShare{clip, sigma, honest, {}});
}

void IslandWorker::encode_round(std::span<const float> theta, RoundResult& r, std::optional<uint64_t> round) {
    const bool ef = codec_->settings().error_feedback;
    const bool on_devices = !share_ && !ef;  // a privacy share is added here, to the whole Δ; a residual is kept here
    if (on_devices && encode_on_devices(theta, r)) return;
    r.encoded_on = share_ ? "on the host, clipped and noised" : "on the host";
    if (pending_) {  // a later Δ is encoded on top of the last one: that one now counts as applied
        commit_pending();
        assumed_.push_back(*pending_);
        pending_.reset();
        while (assumed_.size() + 1 > kMaxUnsettled) assumed_.pop_front();  // with the pending one: at most kMaxUnsettled
    }
    if (delta_.size() != num_params_) delta_ = FloatStore(std::vector<float>(num_params_));  // none yet, or swapped with none
    const std::span<float> delta = delta_.values();
    get_params(delta);
    // Δ = θ - θ_i and, with error feedback (no privacy share to add to Δ first), the residual added in
    // the same pass: the same two roundings as two passes, one pass over memory fewer.
    const bool residual_now = ef && !share_ && residual_.size() != 0;
    if (residual_now) {
        const float* e = residual_.data();
        for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = (theta[i] - delta[i]) + e[i];
        residual_.release();
    } else {
        for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = theta[i] - delta[i];
    }
    if (!ef) {
        r.payload = encode(delta, 0);
        return;
    }
    if (!residual_now) {
        add_share(delta);
        if (residual_.size() == 0) {  // none yet: a residual of zeros, as the codec's own error feedback starts
            for (float& x : delta) x = x + 0.0f;
        } else {
            const float* e = residual_.data();
            for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = delta[i] + e[i];
            residual_.release();
        }
    }
    r.payload = codec_->encode_feedback(delta);  // throws for a non-finite Δ: nothing sent, residual_ as it was
    if (round) pending_ = *round;
    else commit_pending();  // applied at once
}

bool IslandWorker::encode_on_devices(std::span<const float> theta, RoundResult& r) {
    Island* island = inner_->island();
    auto payload = island ? encode_delta_on_island(*island, theta, codec_->spec())
                          : encode_delta_on_device(*inner_->single_model(), theta, codec_->spec());
    if (!payload) return false;
    r.payload = std::move(*payload);
    r.encoded_on = island ? "per shard on " + std::to_string(island->devices()) + " GPUs" : "on the GPU";
    return true;
}

void IslandWorker::commit_pending() {
    if (residual_path_.empty()) {
        std::swap(residual_, delta_);
    } else if (residual_.size() != delta_.size()) {
        residual_ = FloatStore::on_disk(residual_path_, delta_.values());
    } else {
        std::copy(delta_.data(), delta_.data() + delta_.size(), residual_.data());
        residual_.release();
    }
}

void IslandWorker::keep_residual_on_disk(const std::string& path) {
    residual_path_ = path;
    // Made now, so a disk that cannot hold it says so at the start; zeros are where error feedback starts.
    residual_ = residual_.size() > 0 ? FloatStore::on_disk(path, residual_.values()) : FloatStore::on_disk(path, num_params_);
}

RoundResult IslandWorker::run_round(std::span<const float> theta, const RoundPlan& plan,
                                    const std::function<void(const StepStats&)>& on_step) {
    set_params(theta);
    RoundResult r = train(plan.steps, plan.schedule ? &*plan.schedule : nullptr, on_step);
    encode_round(theta, r, plan.round);
    return r;
}

bool IslandWorker::settle(uint64_t round, bool applied) {
    if (pending_ == round) {
        if (applied) commit_pending();  // its residual stands
        pending_.reset();               // dropped: residual_ is as before it
        return true;
    }
    // Counted as applied when a later Δ was encoded on top of it: a drop cannot be undone exactly.
    const auto it = std::find(assumed_.begin(), assumed_.end(), round);
    if (it == assumed_.end()) return true;  // nothing kept for it (no error feedback, or settled already)
    assumed_.erase(it);
    return applied;
}

std::vector<uint64_t> IslandWorker::unsettled() const {
    std::vector<uint64_t> rounds(assumed_.begin(), assumed_.end());
    if (pending_) rounds.push_back(*pending_);
    return rounds;
}

void IslandWorker::reset_residual() {
    codec_->reset(0);
    residual_ = FloatStore();
    pending_.reset();
    assumed_.clear();
}

}  // namespace arch::diloco
