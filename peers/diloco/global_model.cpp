// peers/diloco/global_model.cpp: GlobalModel.
#include "peers/diloco/global_model.h"

#include <sodium.h>

#include <cmath>
#include <cstring>

#include "core/error.h"

namespace arch::diloco {

namespace {
std::unique_ptr<outer::OuterOptimizer> make_optimizer(std::size_t n, const OuterConfig& c) {
    if (c.optimizer == "nesterov") return std::make_unique<outer::Nesterov>(n, outer::NesterovOptions{c.lr, c.momentum});
    if (c.optimizer == "average") return std::make_unique<outer::Nesterov>(outer::make_averaging(n));
    if (c.optimizer == "delayed-nesterov")
        return std::make_unique<outer::DelayedNesterov>(n, outer::DelayedNesterovOptions{c.lr, c.momentum, c.period, 0.0f});
    throw Error("unknown outer optimizer '" + c.optimizer + "': expected nesterov, average or delayed-nesterov");
}
}  // namespace

GlobalModel::GlobalModel(std::vector<float> theta, const OuterConfig& config)
    : config_(config),
      theta_(std::move(theta)),
      optimizer_(make_optimizer(theta_.size(), config)),
      aggregator_(outer::make_aggregator(config.aggregator)),
      down_codec_(compression::make_codec(config.down_codec)),
      scratch_(theta_.size()) {}

std::vector<std::byte> GlobalModel::make_update(std::span<const outer::Contribution> contributions) {
    if (contributions.empty()) throw Error("a round needs at least one pseudo-gradient");
    aggregator_->aggregate(contributions, scratch_);
    return down_codec_->encode(scratch_, 0);
}

void GlobalModel::apply_update(std::span<const std::byte> update) {
    compression::decode(update, scratch_);  // validates everything, throws before touching state
    // A finite update can still overflow θ (Δ near FLT_MAX, momentum): keep what to go back to.
    const std::vector<float> theta_before = theta_;
    const std::vector<std::byte> optimizer_before = optimizer_->save_state();
    hash_.clear();
    optimizer_->step(theta_, scratch_);
    for (float x : theta_) {
        if (std::isfinite(x)) continue;
        theta_ = theta_before;
        optimizer_->load_state(optimizer_before);
        throw Error("the outer step would make θ non-finite; it was discarded and θ kept as it was");
    }
}

std::string hash_floats(std::span<const float> values) { return hash_bytes(std::as_bytes(values)); }

std::string hash_bytes(std::span<const std::byte> bytes) {
    unsigned char h[32];
    crypto_generichash(h, sizeof(h), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), nullptr, 0);
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char c : h) {
        out += hex[c >> 4];
        out += hex[c & 15];
    }
    return out;
}

std::string GlobalModel::hash() const {
    if (hash_.empty()) hash_ = hash_floats(theta_);
    return hash_;
}

std::size_t GlobalModel::state_bytes() const {
    return 8 + theta_.size() * sizeof(float) + optimizer_->save_state().size();
}

std::vector<std::byte> GlobalModel::save_state() const {
    std::vector<std::byte> out(state_bytes());
    save_state(out);
    return out;
}

void GlobalModel::save_state(std::span<std::byte> out) const {
    const std::vector<std::byte> opt = optimizer_->save_state();
    const uint64_t n = theta_.size();
    if (out.size() != 8 + n * sizeof(float) + opt.size())
        throw Error("global state needs " + std::to_string(8 + n * sizeof(float) + opt.size()) + " bytes, given " +
                    std::to_string(out.size()));
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, theta_.data(), n * sizeof(float));
    std::memcpy(out.data() + 8 + n * sizeof(float), opt.data(), opt.size());
}

void GlobalModel::load_state(std::span<const std::byte> bytes) {
    uint64_t n = 0;
    if (bytes.size() < 8) throw Error("global state is truncated");
    std::memcpy(&n, bytes.data(), 8);
    if (n != theta_.size() || bytes.size() < 8 + n * sizeof(float))
        throw Error("global state holds " + std::to_string(n) + " parameters, the model has " +
                    std::to_string(theta_.size()));
    std::vector<float> theta(n);
    std::memcpy(theta.data(), bytes.data() + 8, n * sizeof(float));
    for (float x : theta)
        if (!std::isfinite(x)) throw Error("global state holds a non-finite parameter");
    optimizer_->load_state(bytes.subspan(8 + n * sizeof(float)));  // validates, throws unchanged
    theta_ = std::move(theta);
    hash_.clear();
}

}  // namespace arch::diloco
