// peers/diloco/global_model.cpp: GlobalModel.
#include "peers/diloco/global_model.h"

#include <omp.h>
#include <sodium.h>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <numeric>
#include <optional>

#include "core/bytes.h"
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
    switch (c.optimizer) {
        case OuterOptimizerKind::nesterov:
            return std::make_unique<outer::Nesterov>(n, outer::NesterovOptions{c.lr, c.momentum});
        case OuterOptimizerKind::average:
            return std::make_unique<outer::Nesterov>(outer::make_averaging(n));
        case OuterOptimizerKind::delayed_nesterov:
            return std::make_unique<outer::DelayedNesterov>(n, outer::DelayedNesterovOptions{c.lr, c.momentum, c.period, 0.0f});
    }
    throw Error("an outer optimizer with no kind");
}
}  // namespace

const EnumNames<OuterOptimizerKind>& outer_optimizer_names() {
    static const EnumNames<OuterOptimizerKind> names{{"nesterov", OuterOptimizerKind::nesterov},
                                                     {"average", OuterOptimizerKind::average},
                                                     {"delayed-nesterov", OuterOptimizerKind::delayed_nesterov}};
    return names;
}

void check_outer_config(const OuterConfig& config) {
    make_optimizer(1, config);
    outer::make_aggregator(config.aggregator);
    compression::parse_codec_spec(config.down_codec);
}

GlobalModel::GlobalModel(FloatStore theta, const OuterConfig& config, std::vector<Fragment> fragments,
                         Holder holder)
    : config_(config), theta_(std::make_shared<FloatStore>(std::move(theta))), fragments_(std::move(fragments)) {
    if (fragments_.empty()) {  // the whole vector: covered by construction
        fragments_ = make_fragments(0, 0, theta_->size(), 1);
    } else {
        std::vector<char> covered(theta_->size(), 0);
        for (const Fragment& f : fragments_) {
            for (const auto& [begin, end] : f.ranges) {
                if (begin > end || end > theta_->size()) throw Error("a fragment reaches past the model's parameters");
                for (std::size_t i = begin; i < end; ++i) {
                    if (covered[i]) throw Error("two fragments share parameter " + std::to_string(i));
                    covered[i] = 1;
                }
            }
        }
        if (std::ranges::count(covered, 0) > 0) throw Error("the fragments leave parameters out");
    }
    applied_.assign(fragments_.size(), 0);
    if (holder == Holder::replica) return;
    aggregator_ = outer::make_aggregator(config.aggregator);
    down_codec_ = compression::make_codec(config.down_codec);
    for (const Fragment& f : fragments_) optimizers_.push_back(make_optimizer(f.size, config));
}

std::shared_ptr<const FloatStore> GlobalModel::theta_snapshot() const {
    if (theta_->is_on_disk()) throw Error("θ on disk is not shared with another thread");
    return theta_;
}

FloatStore& GlobalModel::theta_to_change() {
    // Only this thread hands out snapshots, so a count of 1 cannot grow while θ is changed.
    if (theta_.use_count() > 1) {
        const std::span<const float> now = theta_->values();
        theta_ = std::make_shared<FloatStore>(std::vector<float>(now.begin(), now.end()));
        ++theta_copies_;
    }
    return *theta_;
}

void GlobalModel::require_host(const char* what) const {
    if (optimizers_.empty()) throw Error(std::string(what) + " needs the outer optimizer, which only the host holds");
}

uint64_t GlobalModel::updates_applied() const {
    uint64_t n = 0;
    for (const uint64_t a : applied_) n += a;
    return n;
}

uint64_t GlobalModel::updates_applied(int p) const { return applied_.at(static_cast<std::size_t>(p)); }

float GlobalModel::next_lr(int p) const {
    const outer::OuterLrSchedule s{config_.lr, config_.final_lr, config_.lr_warmup, config_.total_updates};
    return outer_lr_at(s, updates_applied(p));
}

std::vector<std::byte> GlobalModel::make_update(std::span<const outer::WeightedDelta> contributions, int p) {
    scratch_.resize(fragment(p).size);
    return make_update(contributions, p, scratch_);
}

std::vector<std::byte> GlobalModel::make_update(std::span<const HeldDelta> held, int p) {
    scratch_.resize(fragment(p).size);
    return make_update(held, p, scratch_);
}

std::vector<std::byte> GlobalModel::make_update(std::span<const outer::WeightedDelta> contributions, int p,
                                                std::span<float> scratch) {
    require_host("make_update");
    if (contributions.empty()) throw Error("a round needs at least one pseudo-gradient");
    if (scratch.size() < fragment(p).size) throw Error("make_update: scratch smaller than the fragment");
    scratch = scratch.first(fragment(p).size);
    aggregator_->aggregate(contributions, scratch);
    return step_and_encode(p, scratch);
}

std::vector<std::byte> GlobalModel::make_update(std::span<const HeldDelta> held, int p, std::span<float> scratch) {
    aggregate_held(held, p, scratch);
    return step_and_encode(p, scratch.first(fragment(p).size));
}

void GlobalModel::aggregate_held(std::span<const HeldDelta> held, int p, std::span<float> scratch, std::span<Seen> seen) {
    require_host("make_update");
    if (held.empty()) throw Error("a round needs at least one pseudo-gradient");
    if (scratch.size() < fragment(p).size) throw Error("make_update: scratch smaller than the fragment");
    if (!aggregator_->per_coordinate())
        throw Error("outer.aggregator '" + aggregator_->name() + "' does not aggregate slice by slice");
    if (!seen.empty() && seen.size() != held.size()) throw Error("aggregate_held: one Seen per held Δ");
    const std::size_t n = fragment(p).size;
    // Slices start where every held codec's blocks do.
    uint64_t align = 1;
    for (const HeldDelta& h : held) {
        if (h.payload->count() != n)
            throw Error("a held pseudo-gradient of " + std::to_string(h.payload->count()) + " values for " + std::to_string(n));
        align = std::lcm(align, h.payload->alignment());
    }
    const uint64_t slice = compression::slice_length(align);
    const std::size_t count = held.size(), slices = static_cast<std::size_t>((n + slice - 1) / slice);
    scratch = scratch.first(n);
    // Slices are independent: each decoded, squared, clamped and aggregated on one of every thread,
    // with a decoding scratch of its own, where the slices are the square sums' runs (each slice's
    // sums merged in order after) and no payload is read from its frames; in order on this thread,
    // each step on every thread, otherwise.
    bool apart = slice == outer::SquareSum::kRun && slices > 1;
    for (const HeldDelta& h : held) apart = apart && !h.payload->frames();
    const int threads = apart ? omp_get_max_threads() : 1;
    if (slices_.size() < static_cast<std::size_t>(threads)) slices_.resize(static_cast<std::size_t>(threads));
    std::vector<outer::SquareSum::Lanes> lanes(apart && !seen.empty() ? count * slices : 0);
    std::vector<uint64_t> beyond(count * slices, 0);
    std::exception_ptr failed;
    std::atomic<bool> stop{false};
#pragma omp parallel num_threads(threads) if (apart)
    {
        ThreadSlices& mine = slices_[static_cast<std::size_t>(omp_get_thread_num())];
        mine.values.resize(count);
        std::vector<outer::WeightedDelta> in(count);
#pragma omp for schedule(static)
        for (std::size_t s = 0; s < slices; ++s) {
            if (stop.load(std::memory_order_relaxed)) continue;
            try {
                const uint64_t first = s * slice;
                const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(slice, n - first));
                for (std::size_t i = 0; i < count; ++i) {
                    std::vector<float>& buffer = mine.values[i];
                    if (buffer.size() < len) buffer.resize(len);
                    const std::span<float> values = std::span(buffer).first(len);
                    if (apart) held[i].payload->decode(first, values, mine.codes);
                    else held[i].payload->decode(first, values);
                    if (!seen.empty()) {
                        if (apart) lanes[i * slices + s] = outer::SquareSum::of_run(values);
                        else seen[i].squares.add(values, 1.0f);
                    }
                    if (held[i].scale != 1.0f)  // as NormScreen::screen clips a whole Δ
                        for (float& x : values) x *= held[i].scale;
                    beyond[i * slices + s] = outer::clamp_values(values, held[i].limit);
                    in[i] = {values, held[i].tokens};
                }
                aggregator_->aggregate(in, scratch.subspan(first, len));
            } catch (...) {  // an exception must not leave the parallel region: the first is thrown below
#pragma omp critical(aggregate_held_failed)
                if (!failed) failed = std::current_exception();
                stop = true;
            }
        }
    }
    if (failed) std::rethrow_exception(failed);
    for (std::size_t i = 0; i < seen.size(); ++i)
        for (std::size_t s = 0; s < slices; ++s) {
            if (apart) seen[i].squares.merge(lanes[i * slices + s], std::min<uint64_t>(slice, n - s * slice));
            seen[i].beyond += beyond[i * slices + s];
        }
}

namespace {
// Calls fn(at, from, count) for the runs of θ that hold a fragment's values [first, first + len):
// θ[at + k] is the fragment's value first + from + k.
template <class Fn>
void for_each_run(const Fragment& f, std::size_t first, std::size_t len, Fn&& fn) {
    std::size_t local = 0;  // the fragment's index of the range's start
    for (const auto& [begin, end] : f.ranges) {
        const std::size_t lo = std::max(first, local), hi = std::min(first + len, local + (end - begin));
        if (lo < hi) fn(begin + (lo - local), lo - first, hi - lo);
        local += end - begin;
        if (local >= first + len) return;
    }
}
}  // namespace

std::vector<std::byte> GlobalModel::step_and_encode(int p, std::span<float> aggregate) {
    const Fragment& f = fragment(p);
    outer::OuterOptimizer& optimizer = *optimizers_[static_cast<std::size_t>(p)];
    // Only "average" ignores the lr; every other optimizer follows the schedule.
    if (config_.optimizer != OuterOptimizerKind::average) optimizer.set_lr(next_lr(p));
    const bool whole = f.ranges.size() == 1 && f.ranges[0].first == 0 && f.size == theta_->size();
    std::span<const float> params(theta_->values());
    if (!whole) {
        params_.resize(f.size);
        gather(f, theta_->values(), params_);
        params = params_;
    }
    // A finite aggregate can still overflow θ (Δ near FLT_MAX, momentum): checked before anything moves.
    if (!optimizer.step_stays_finite(params, aggregate))
        throw Error("the outer step would make θ non-finite; it was discarded and θ kept as it was");
    optimizer.take_step(aggregate);  // aggregate: now the change of θ
    // Every decoder gives at most a block's largest magnitude (times 1 + its rounding), so within
    // this bound no island's θ can leave fp32 by the codec's rounding; past it the change goes exact.
    const double reach = static_cast<double>(outer::largest_magnitude(params)) + 2.0 * outer::largest_magnitude(aggregate);
    if (reach < 0.5 * FLT_MAX) return down_codec_->encode(aggregate, static_cast<uint64_t>(p));
    return compression::make_codec("fp32")->encode(aggregate, 0);
}

void GlobalModel::apply_update(std::span<const std::byte> update, int p) {
    const Fragment& f = fragment(p);
    // Validated whole (header, sizes, zstd frames, scales) before θ is touched, and read where it lies.
    // A replica keeps a blockwise codec's zstd stage as it came, a slice's codes taken out of it as
    // they are added: no copy of the payload, for a second pass over the frames (a peer's memory is
    // θ and its residual). The host, which holds the update's bytes anyway, takes the stage out on
    // all its threads, into the last update's memory, as a replica does for other codecs.
    const auto keep = optimizers_.empty() ? compression::HeldPayload::Keep::frames : compression::HeldPayload::Keep::borrow;
    compression::HeldPayload change(update, f.size, keep, std::move(update_payload_));
    const std::size_t slice = static_cast<std::size_t>(compression::slice_length(change.alignment()));
    // A refused update changes nothing. Where the largest |θ| and the largest value the change can
    // decode to (its scales say) cannot reach fp32's range, θ stays finite: one pass adds it. Otherwise
    // two passes over the slices: first that θ stays finite, then the addition.
    if (theta_bound_ < 0) theta_bound_ = outer::largest_magnitude(theta_->values());
    const bool sure = static_cast<double>(theta_bound_) + static_cast<double>(change.magnitude_bound()) < 0.5 * FLT_MAX;
    float largest = 0.0f;  // |θ| after the addition, over the runs it changed
    const bool whole = f.ranges.size() == 1 && f.ranges[0].first == 0 && f.size == theta_->size();
    std::shared_ptr<FloatStore> fresh;  // while a snapshot holds θ: new memory for the sum
    FloatStore* into = nullptr;         // where the sum goes
    for (const bool add : {false, true}) {
        if (!add && sure) continue;
        if (add && whole && theta_.use_count() > 1) {
            // The pass that reads θ writes the sum into new memory: no copy of θ before the addition.
            fresh = std::make_shared<FloatStore>(FloatStore::zeros(theta_->size()));
            ++theta_copies_;
            into = fresh.get();
        } else if (add) {
            into = &theta_to_change();
        }
        std::size_t bad = 0;
        // θ whole in its order: the new θ's hash taken a slice at a time as each is written, while it
        // is in the cache, rather than in a pass of its own when hash() is asked.
        std::optional<Checksum> theta_hash;
        if (add && whole) theta_hash.emplace();
        for (std::size_t first = 0; first < f.size; first += slice) {
            const std::size_t len = std::min(slice, f.size - first);
            if (slice_.size() < len) slice_.resize(len);
            const std::span<float> d = std::span(slice_).first(len);
            change.decode(first, d);
            for_each_run(f, first, len, [&](std::size_t at, std::size_t from, std::size_t count) {
                const float* x = d.data() + from;
                if (add) {
                    const float* was = theta_->data() + at;
                    float* t = into->data() + at;
                    float most = 0.0f;
#pragma omp parallel for simd schedule(static) reduction(max : most) if (count > (1 << 18))
                    for (std::size_t i = 0; i < count; ++i) {
                        t[i] = was[i] + x[i];
                        most = std::max(most, std::fabs(t[i]));
                    }
                    largest = std::max(largest, most);
                } else {
                    const float* t = theta_->data() + at;
                    std::size_t n_bad = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : n_bad) if (count > (1 << 18))
                    for (std::size_t i = 0; i < count; ++i) n_bad += !std::isfinite(t[i] + x[i]);
                    bad += n_bad;
                }
            });
            if (theta_hash) theta_hash->add(std::as_bytes(std::span<const float>(into->data() + first, len)));
        }
        if (bad > 0) throw Error("the update would make θ non-finite; it was discarded and θ kept as it was");
        if (theta_hash) hash_ = theta_hash->hex();
    }
    if (fresh) theta_ = std::move(fresh);
    // Still at least the largest |θ|: the runs left alone are within the old bound.
    theta_bound_ = f.size == theta_->size() ? largest : std::max(theta_bound_, largest);
    update_payload_ = change.release_buffer();
    ++applied_[static_cast<std::size_t>(p)];
    if (!whole) hash_.clear();
    theta_->release();
}

std::string hash_floats(std::span<const float> values) {
    // XXH3-128: θ's check of sync runs on every island and the host once an update, on the round's
    // path, where BLAKE2b took 0.7 s at 124M; it guards against divergence, not against a forger (a
    // peer that lies about θ can send any hash).
    const std::span<const std::byte> one[] = {std::as_bytes(values)};
    return checksum(one);
}

std::string checksum(std::span<const std::span<const std::byte>> parts) {
    Checksum sum;
    for (const std::span<const std::byte> part : parts) sum.add(part);
    return sum.hex();
}

void Checksum::add(std::span<const std::byte> part) { stream_.add(part); }

std::string Checksum::hex() const {
    const Digest d = stream_.digest();
    return to_hex(reinterpret_cast<const unsigned char*>(d.data()), d.size());
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
    if (hash_.empty()) {
        hash_ = hash_floats(theta_->values());
        theta_->release();
    }
    return hash_;
}

std::string GlobalModel::fragment_hash(int p) const {
    std::vector<float> values(fragment(p).size);
    fragment_theta(p, values);
    return hash_floats(values);
}

void GlobalModel::fragment_theta(int p, std::span<float> out) const { gather(fragment(p), theta_->values(), out); }

std::size_t GlobalModel::replica_state_bytes() const { return 8 + theta_->size() * sizeof(float) + 8 + 8 * applied_.size(); }

void GlobalModel::save_replica_state(std::span<std::byte> out) const {
    if (out.size() != replica_state_bytes())
        throw Error("a replica's state needs " + std::to_string(replica_state_bytes()) + " bytes, given " +
                    std::to_string(out.size()));
    const ReplicaState state = replica_state(theta_);
    std::byte* at = std::copy(state.head.begin(), state.head.end(), out.data());
    const std::span<const std::byte> theta = state.theta_bytes();
    at = std::copy(theta.begin(), theta.end(), at);
    std::copy(state.tail.begin(), state.tail.end(), at);
}

GlobalModel::ReplicaState GlobalModel::replica_state() const { return replica_state(theta_snapshot()); }

GlobalModel::ReplicaState GlobalModel::replica_state(std::shared_ptr<const FloatStore> theta) const {
    ReplicaState state;
    state.head.resize(8);
    store_le(state.head.data(), uint64_t{theta->size()});
    state.theta = std::move(theta);
    state.tail.resize(8 + 8 * applied_.size());
    store_le(state.tail.data(), uint64_t{applied_.size()});
    for (std::size_t p = 0; p < applied_.size(); ++p) store_le(state.tail.data() + 8 + 8 * p, applied_[p]);
    return state;
}

std::span<const std::byte> GlobalModel::ReplicaState::theta_bytes() const {
    return std::as_bytes(theta->values());
}

void GlobalModel::load_replica_state(std::span<const std::byte> bytes) { take_replica_state(bytes, nullptr, 0); }

void GlobalModel::load_replica_state(std::vector<std::byte> blob, std::size_t at) {
    if (at > blob.size()) throw Error("global state is truncated");
    take_replica_state(std::span<const std::byte>(blob).subspan(at), &blob, at);
}

void GlobalModel::take_replica_state(std::span<const std::byte> bytes, std::vector<std::byte>* blob, std::size_t at) {
    uint64_t n = 0, fragments = 0;
    if (bytes.size() < 8) throw Error("global state is truncated");
    n = load_le<uint64_t>(bytes.data());
    if (n != theta_->size())
        throw Error("global state holds " + std::to_string(n) + " parameters, the model has " + std::to_string(theta_->size()));
    if (bytes.size() != replica_state_bytes()) throw Error("global state is " + std::to_string(bytes.size()) +
                                                           " bytes, expected " + std::to_string(replica_state_bytes()));
    const std::byte* counts = bytes.data() + 8 + n * sizeof(float);
    fragments = load_le<uint64_t>(counts);
    if (fragments != applied_.size())
        throw Error("global state has " + std::to_string(fragments) + " fragments, the run " + std::to_string(applied_.size()));
    const std::byte* theta = bytes.data() + 8;
    const bool aligned = reinterpret_cast<std::uintptr_t>(theta) % alignof(float) == 0;
    // One pass checks the floats and hashes them, a block at a time while it is in the cache (floats
    // that are not aligned where they lie are read through an aligned copy of the block).
    Checksum sum;
    constexpr std::size_t kBlock = 16384;
    std::vector<float> unaligned(aligned ? 0 : std::min(kBlock, static_cast<std::size_t>(n)));
    for (std::size_t i = 0; i < n; i += kBlock) {
        const std::size_t len = std::min<std::size_t>(kBlock, n - i);
        const std::byte* from = theta + i * sizeof(float);
        if (!aligned) std::memcpy(unaligned.data(), from, len * sizeof(float));
        const float* block = aligned ? reinterpret_cast<const float*>(from) : unaligned.data();
        float z = 0.0f;  // x * 0 is 0 for finite x, NaN otherwise
#pragma omp simd reduction(+ : z)
        for (std::size_t k = 0; k < len; ++k) z += block[k] * 0.0f;
        if (z != 0.0f) throw Error("global state holds a non-finite parameter");
        sum.add(std::span<const std::byte>(from, len * sizeof(float)));
    }
    std::vector<uint64_t> applied(fragments);
    for (uint64_t p = 0; p < fragments; ++p) applied[p] = load_le<uint64_t>(counts + 8 + 8 * p);
    if (blob && aligned && !theta_->is_on_disk() && theta_.use_count() == 1)
        *theta_ = FloatStore::within(std::move(*blob), at + 8, n);
    else
        std::memcpy(theta_to_change().data(), theta, n * sizeof(float));
    theta_bound_ = -1.0f;
    applied_ = std::move(applied);
    hash_ = sum.hex();
    theta_->release();
}

// Layout: uint64 n, n floats of θ, then each fragment's optimizer state; with several fragments each
// state is preceded by its uint64 length (one fragment: exactly the plain DiLoCo layout).
std::size_t GlobalModel::outer_state_bytes() const {
    require_host("the outer state");
    std::size_t bytes = 0;
    for (const auto& o : optimizers_) bytes += (optimizers_.size() > 1 ? 8 : 0) + o->state_size();
    return bytes;
}

std::size_t GlobalModel::state_bytes() const { return 8 + theta_->size() * sizeof(float) + outer_state_bytes(); }

std::vector<std::byte> GlobalModel::save_state() const {
    std::vector<std::byte> out(state_bytes());
    save_state(out);
    return out;
}

void GlobalModel::save_state(std::span<std::byte> out) const {
    if (out.size() != state_bytes())
        throw Error("global state needs " + std::to_string(state_bytes()) + " bytes, given " + std::to_string(out.size()));
    const uint64_t n = theta_->size();
    store_le(out.data(), n);
    std::memcpy(out.data() + 8, theta_->data(), n * sizeof(float));
    save_outer_state(out.subspan(8 + n * sizeof(float)));
}

void GlobalModel::save_outer_state(std::span<std::byte> rest) const {
    if (rest.size() != outer_state_bytes())
        throw Error("the outer state needs " + std::to_string(outer_state_bytes()) + " bytes, given " + std::to_string(rest.size()));
    std::size_t at = 0;
    write_outer_state([&](std::span<const std::byte> part) {
        std::memcpy(rest.data() + at, part.data(), part.size());
        at += part.size();
    });
}

void GlobalModel::write_outer_state(const std::function<void(std::span<const std::byte>)>& put) const {
    require_host("the outer state");
    for (const auto& o : optimizers_) {
        const uint64_t len = o->state_size();
        std::byte prefix[8];
        store_le(prefix, len);
        if (optimizers_.size() > 1) put(prefix);
        o->write_state(put);
    }
}

void GlobalModel::load_state(std::span<const std::byte> bytes) {
    require_host("load_state");
    uint64_t n = 0;
    if (bytes.size() < 8) throw Error("global state is truncated");
    n = load_le<uint64_t>(bytes.data());
    if (n != theta_->size() || bytes.size() < 8 + n * sizeof(float))
        throw Error("global state holds " + std::to_string(n) + " parameters, the model has " +
                    std::to_string(theta_->size()));
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
            len = load_le<uint64_t>(rest.data());
            if (len > rest.size() - 8) throw Error("global state is truncated (fragment " + std::to_string(p) + ")");
            parts.push_back(rest.subspan(8, len));
            rest = rest.subspan(8 + len);
        }
        if (!rest.empty()) throw Error("global state has " + std::to_string(rest.size()) + " bytes too many");
        for (std::size_t p = 0; p < optimizers_.size(); ++p) make_optimizer(fragments_[p].size, config_)->load_state(parts[p]);
        for (std::size_t p = 0; p < optimizers_.size(); ++p) optimizers_[p]->load_state(parts[p]);
    }
    std::memcpy(theta_to_change().data(), theta.data(), n * sizeof(float));
    theta_bound_ = -1.0f;
    for (std::size_t p = 0; p < optimizers_.size(); ++p) applied_[p] = optimizers_[p]->steps();
    hash_.clear();
}

}  // namespace arch::diloco
