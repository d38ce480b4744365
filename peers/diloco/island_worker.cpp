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
    if (!ef) {
        r.payload = encode(pseudo_gradient(theta), 0);
        return;
    }
    if (residual_.size() != num_params_) fresh_residual();
    // y = Δ + residual, in the residual's own memory: the same two roundings as Δ first, then the sum.
    const std::span<float> y = residual_.values();
    bool finite = false;  // seen in the pass that made y: the codec need not read y again to check it
    if (share_) {
        const std::span<float> delta = pseudo_gradient(theta);
        add_share(delta);
        for (std::size_t i = 0; i < y.size(); ++i) y[i] = delta[i] + y[i];
    } else {
        finite = add_pseudo_gradient(theta, y);
    }
    try {
        r.payload = codec_->encode_feedback(y, finite);  // y becomes what the Δ's rounding left out
    } catch (...) {
        // A non-finite Δ: nothing is sent, and the residual, which holds it by now, starts afresh.
        fresh_residual();
        open_.clear();
        throw;
    }
    residual_.release();
    if (!round) return;
    open_.push_back(*round);
    while (open_.size() > kMaxUnsettled) open_.pop_front();
}

std::span<float> IslandWorker::pseudo_gradient(std::span<const float> theta) {
    if (scratch_.size() != num_params_) scratch_ = FloatStore(std::vector<float>(num_params_));
    const std::span<float> delta = scratch_.values();
    get_params(delta);
    for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = theta[i] - delta[i];
    return delta;
}

bool IslandWorker::add_pseudo_gradient(std::span<const float> theta, std::span<float> y) {
    // z stays 0 while every sum is finite (x * 0 is NaN for inf and NaN): a check in the same pass.
    const auto add = [](const float* t, const float* p, float* out, std::size_t n) {
        float z = 0.0f;
#pragma omp simd reduction(+ : z)
        for (std::size_t i = 0; i < n; ++i) {
            out[i] = (t[i] - p[i]) + out[i];
            z += out[i] * 0.0f;
        }
        return z == 0.0f;
    };
    constexpr std::size_t kSlice = std::size_t{1} << 18;  // 1 MiB of θ_i at a time
    std::vector<float> slice(std::min(kSlice, y.size()));
    bool finite = true;
    for (std::size_t at = 0; at < y.size(); at += kSlice) {
        const std::size_t n = std::min(kSlice, y.size() - at);
        const std::span<float> p(slice.data(), n);
        if (!inner_->read_slice(StateVector::params, at, p)) {  // the devices give θ_i whole only
            if (at != 0) throw Error("the island's engine stopped giving θ_i a slice at a time part-way");
            if (scratch_.size() != num_params_) scratch_ = FloatStore(std::vector<float>(num_params_));
            get_params(scratch_.values());
            return add(theta.data(), scratch_.data(), y.data(), y.size());
        }
        finite = add(theta.data() + at, p.data(), y.data() + at, n) && finite;
    }
    return finite;
}

namespace {
constexpr std::size_t kMomentSlice = std::size_t{1} << 20;  // 4 MiB of m or v at a time
}  // namespace

void IslandWorker::read_moments(const MomentSlice& fn) {
    std::vector<float> slice(std::min(kMomentSlice, num_params_));
    for (const StateVector which : {StateVector::m, StateVector::v})
        for (std::size_t at = 0; at < num_params_; at += kMomentSlice) {
            const std::span<float> s(slice.data(), std::min(kMomentSlice, num_params_ - at));
            if (inner_->read_slice(which, at, s)) {
                fn(which, at, s);
                continue;
            }
            if (at != 0 || which != StateVector::m)
                throw Error("the island's engine stopped giving its moments a slice at a time part-way");
            std::vector<float> m(num_params_), v(num_params_);  // the devices give them whole only
            inner_->get_adamw_state(m, v);
            fn(StateVector::m, 0, m);
            fn(StateVector::v, 0, v);
            return;
        }
}

void IslandWorker::write_moments(const MomentFill& fill) {
    const std::size_t k = std::min(kMomentSlice, num_params_);
    std::vector<float> m(k), v(k);
    for (std::size_t at = 0; at < num_params_; at += kMomentSlice) {
        const std::size_t n = std::min(kMomentSlice, num_params_ - at);
        fill(at, std::span(m.data(), n), std::span(v.data(), n));
        if (inner_->write_moments_slice(at, std::span(m.data(), n), std::span(v.data(), n))) continue;
        if (at != 0) throw Error("the island's engine stopped taking its moments a slice at a time part-way");
        std::vector<float> whole_m(num_params_), whole_v(num_params_);  // the devices take them whole only
        fill(0, whole_m, whole_v);
        inner_->set_adamw_state(whole_m, whole_v);
        return;
    }
}

void IslandWorker::fresh_residual() {
    residual_ = residual_path_.empty() ? FloatStore(std::vector<float>(num_params_))
                                       : FloatStore::on_disk(residual_path_, num_params_);
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

void IslandWorker::settle(uint64_t round) {
    const auto it = std::find(open_.begin(), open_.end(), round);
    if (it != open_.end()) open_.erase(it);
}

std::vector<uint64_t> IslandWorker::unsettled() const {
    return {open_.begin(), open_.end()};
}

void IslandWorker::reset_residual() {
    codec_->reset(0);
    residual_ = FloatStore();
    if (!residual_path_.empty()) fresh_residual();
    open_.clear();
}

}  // namespace arch::diloco
