// peers/diloco/global_model.cpp: GlobalModel.
#include "peers/diloco/global_model.h"

#include <sodium.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"

namespace arch::diloco {

namespace {
std::string to_hex(const unsigned char* bytes, std::size_t n) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        out += hex[bytes[i] >> 4];
        out += hex[bytes[i] & 15];
    }
    return out;
}

std::unique_ptr<outer::OuterOptimizer> make_optimizer(std::size_t n, const OuterConfig& c) {
    if (c.optimizer == "nesterov") return std::make_unique<outer::Nesterov>(n, outer::NesterovOptions{c.lr, c.momentum});
    if (c.optimizer == "average") return std::make_unique<outer::Nesterov>(outer::make_averaging(n));
    if (c.optimizer == "delayed-nesterov")
        return std::make_unique<outer::DelayedNesterov>(n, outer::DelayedNesterovOptions{c.lr, c.momentum, c.period, 0.0f});
    throw Error("unknown outer optimizer '" + c.optimizer + "': expected nesterov, average or delayed-nesterov");
}
}  // namespace

void check_outer_config(const OuterConfig& config) {
    make_optimizer(1, config);
    outer::make_aggregator(config.aggregator);
    compression::parse_codec_spec(config.down_codec);
}

GlobalModel::GlobalModel(std::vector<float> theta, const OuterConfig& config, std::vector<Fragment> fragments)
    : config_(config),
      theta_(std::move(theta)),
      fragments_(std::move(fragments)),
      aggregator_(outer::make_aggregator(config.aggregator)),
      down_codec_(compression::make_codec(config.down_codec)) {
    if (fragments_.empty()) {  // the whole vector: covered by construction
        fragments_ = make_fragments(0, 0, theta_.size(), 1);
        optimizers_.push_back(make_optimizer(theta_.size(), config));
        return;
    }
    std::vector<char> covered(theta_.size(), 0);
    for (const Fragment& f : fragments_) {
        for (const auto& [begin, end] : f.ranges) {
            if (begin > end || end > theta_.size()) throw Error("a fragment reaches past the model's parameters");
            for (std::size_t i = begin; i < end; ++i) {
                if (covered[i]) throw Error("two fragments share parameter " + std::to_string(i));
                covered[i] = 1;
            }
        }
        optimizers_.push_back(make_optimizer(f.size, config));
    }
    if (std::ranges::count(covered, 0) > 0) throw Error("the fragments leave parameters out");
}

uint64_t GlobalModel::updates_applied() const {
    uint64_t n = 0;
    for (const auto& o : optimizers_) n += o->steps();
    return n;
}

uint64_t GlobalModel::updates_applied(int p) const { return optimizers_.at(static_cast<std::size_t>(p))->steps(); }

float GlobalModel::next_lr(int p) const {
    const outer::OuterLrSchedule s{config_.lr, config_.final_lr, config_.lr_warmup, config_.total_updates};
    return outer_lr_at(s, updates_applied(p));
}

std::vector<std::byte> GlobalModel::make_update(std::span<const outer::WeightedDelta> contributions, int p) {
    if (contributions.empty()) throw Error("a round needs at least one pseudo-gradient");
    scratch_.resize(fragment(p).size);
    aggregator_->aggregate(contributions, scratch_);
    return down_codec_->encode(scratch_, static_cast<uint64_t>(p));
}

std::vector<std::byte> GlobalModel::make_update(std::span<const HeldDelta> held, int p) {
    if (held.empty()) throw Error("a round needs at least one pseudo-gradient");
    if (!aggregator_->per_coordinate())
        throw Error("outer.aggregator '" + aggregator_->name() + "' does not aggregate slice by slice");
    const std::size_t n = fragment(p).size;
    // Slices start where every held codec's blocks do.
    uint64_t align = 1;
    for (const HeldDelta& h : held) {
        if (h.payload->count() != n)
            throw Error("a held pseudo-gradient of " + std::to_string(h.payload->count()) + " values for " + std::to_string(n));
        align = std::lcm(align, h.payload->alignment());
    }
    const uint64_t slice = compression::slice_length(align);
    slices_.resize(held.size());
    scratch_.resize(n);
    std::vector<outer::WeightedDelta> in(held.size());
    for (uint64_t first = 0; first < n; first += slice) {
        const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(slice, n - first));
        for (std::size_t i = 0; i < held.size(); ++i) {
            std::vector<float>& buffer = slices_[i];
            if (buffer.size() < len) buffer.resize(len);
            const std::span<float> values = std::span(buffer).first(len);
            held[i].payload->decode(first, values);
            if (held[i].scale != 1.0f)  // as NormScreen::screen clips a whole Δ
                for (float& x : values) x *= held[i].scale;
            in[i] = {values, held[i].tokens};
        }
        aggregator_->aggregate(in, std::span(scratch_).subspan(first, len));
    }
    return down_codec_->encode(scratch_, static_cast<uint64_t>(p));
}

void GlobalModel::apply_update(std::span<const std::byte> update, int p) {
    const Fragment& f = fragment(p);
    outer::OuterOptimizer& optimizer = *optimizers_[static_cast<std::size_t>(p)];
    scratch_.resize(f.size);
    compression::decode(update, scratch_);  // validates everything, throws before touching state
    // Only "average" ignores the lr; every other optimizer follows the schedule.
    if (config_.optimizer != "average") optimizer.set_lr(next_lr(p));
    // One fragment is θ itself; several are gathered into a buffer kept for the next update.
    const bool whole = f.ranges.size() == 1 && f.ranges[0].first == 0 && f.size == theta_.size();
    std::span<float> params(theta_);
    if (!whole) {
        params_.resize(f.size);
        gather(f, theta_, params_);
        params = params_;
    }
    // A finite update can still overflow θ (Δ near FLT_MAX, momentum): checked before anything moves.
    if (!optimizer.step_stays_finite(params, scratch_))
        throw Error("the outer step would make θ non-finite; it was discarded and θ kept as it was");
    optimizer.step(params, scratch_);
    hash_.clear();
    if (!whole) scatter(f, params_, theta_);
}

std::string hash_floats(std::span<const float> values) {
    // XXH3-128: θ's check of sync runs on every island and the host once an update, on the round's
    // path, where BLAKE2b took 0.7 s at 124M; it guards against divergence, not against a forger (a
    // peer that lies about θ can send any hash).
    const std::span<const std::byte> one[] = {std::as_bytes(values)};
    return checksum(one);
}

std::string checksum(std::span<const std::span<const std::byte>> parts) {
    XXH3_state_t* state = XXH3_createState();
    if (!state) throw Error("out of memory for a checksum");
    XXH3_128bits_reset(state);
    for (const std::span<const std::byte> part : parts) XXH3_128bits_update(state, part.data(), part.size());
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state));
    XXH3_freeState(state);
    return to_hex(c.digest, sizeof(c.digest));
}

std::string hash_bytes(std::span<const std::byte> bytes) {
    const std::span<const std::byte> one[] = {bytes};
    return hash_bytes(one);
}

std::string hash_bytes(std::span<const std::span<const std::byte>> parts) {
    crypto_generichash_state state;
    crypto_generichash_init(&state, nullptr, 0, 32);
    for (const std::span<const std::byte> part : parts)
        crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(part.data()), part.size());
    unsigned char h[32];
    crypto_generichash_final(&state, h, sizeof(h));
    return to_hex(h, sizeof(h));
}

std::string GlobalModel::hash() const {
    if (hash_.empty()) hash_ = hash_floats(theta_);
    return hash_;
}

std::string GlobalModel::fragment_hash(int p) const {
    std::vector<float> values(fragment(p).size);
    fragment_theta(p, values);
    return hash_floats(values);
}

void GlobalModel::fragment_theta(int p, std::span<float> out) const { gather(fragment(p), theta_, out); }

// Layout: uint64 n, n floats of θ, then each fragment's optimizer state; with several fragments each
// state is preceded by its uint64 length (one fragment: exactly the plain DiLoCo layout).
std::size_t GlobalModel::state_bytes() const {
    std::size_t bytes = 8 + theta_.size() * sizeof(float);
    for (const auto& o : optimizers_) bytes += (optimizers_.size() > 1 ? 8 : 0) + o->state_size();
    return bytes;
}

std::vector<std::byte> GlobalModel::save_state() const {
    std::vector<std::byte> out(state_bytes());
    save_state(out);
    return out;
}

void GlobalModel::save_state(std::span<std::byte> out) const {
    if (out.size() != state_bytes())
        throw Error("global state needs " + std::to_string(state_bytes()) + " bytes, given " + std::to_string(out.size()));
    const uint64_t n = theta_.size();
    std::memcpy(out.data(), &n, 8);
    std::memcpy(out.data() + 8, theta_.data(), n * sizeof(float));
    std::span<std::byte> rest = out.subspan(8 + n * sizeof(float));
    for (const auto& o : optimizers_) {
        const uint64_t len = o->state_size();
        if (optimizers_.size() > 1) {
            std::memcpy(rest.data(), &len, 8);
            rest = rest.subspan(8);
        }
        o->save_state(rest.first(len));
        rest = rest.subspan(len);
    }
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
    std::span<const std::byte> rest = bytes.subspan(8 + n * sizeof(float));
    if (optimizers_.size() == 1) {
        optimizers_[0]->load_state(rest);  // validates, throws unchanged
    } else {
        // Every fragment's state is checked on a copy first, so a bad one changes nothing.
        std::vector<std::span<const std::byte>> parts;
        for (std::size_t p = 0; p < optimizers_.size(); ++p) {
            uint64_t len = 0;
            if (rest.size() < 8) throw Error("global state is truncated (fragment " + std::to_string(p) + ")");
            std::memcpy(&len, rest.data(), 8);
            if (len > rest.size() - 8) throw Error("global state is truncated (fragment " + std::to_string(p) + ")");
            parts.push_back(rest.subspan(8, len));
            rest = rest.subspan(8 + len);
        }
        if (!rest.empty()) throw Error("global state has " + std::to_string(rest.size()) + " bytes too many");
        for (std::size_t p = 0; p < optimizers_.size(); ++p) make_optimizer(fragments_[p].size, config_)->load_state(parts[p]);
        for (std::size_t p = 0; p < optimizers_.size(); ++p) optimizers_[p]->load_state(parts[p]);
    }
    theta_ = std::move(theta);
    hash_.clear();
}

}  // namespace arch::diloco
