// core/zero3.cpp: Zero3Store: the shard layout, gathers with prefetch, reduce-scatters, and AdamW on
// the shard. Full-unit buffers come from a small pool (at most ~4 live: globals, the current block,
// the prefetched block, a gradient being reduce-scattered), so the pool's size is the transient memory.
#include "core/zero3.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"

namespace arch {

Zero3Store::Zero3Store(const ParamLayout& layout, Backend& backend, Collective& collective)
    : layout_(layout),
      backend_(backend),
      collective_(collective),
      shards_(layout, collective.world_size(), collective.rank()),
      world_(collective.world_size()),
      num_units_(num_units(layout)) {
    const std::size_t N = static_cast<std::size_t>(world_);
    auto alloc = [&](std::size_t floats) {
        return static_cast<float*>(backend_.alloc(std::max<std::size_t>(floats, 1) * sizeof(float)));
    };
    params_ = alloc(shards_.shard_size);
    grads_ = alloc(shards_.shard_size);
    m_ = alloc(shards_.shard_size);
    v_ = alloc(shards_.shard_size);
    piece_scratch_ = alloc(std::max(shards_.max_piece, 2 * N + 2));  // also the norm exchange buffer
    gathered_.resize(num_units_);
    unit_grads_.assign(num_units_, nullptr);
}

Zero3Store::~Zero3Store() {
    try {
        comm_.drain();
    } catch (...) {  // already reported to whoever waited on the failed job
    }
    for (auto& [p, floats] : pool_all_) backend_.free(p);
    for (float* p : {params_, grads_, m_, v_, piece_scratch_}) backend_.free(p);
}

float* Zero3Store::acquire(std::size_t floats) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto it = pool_free_.find(floats);
    if (it != pool_free_.end()) {
        float* p = it->second;
        pool_free_.erase(it);
        return p;
    }
    float* p = static_cast<float*>(backend_.alloc(std::max<std::size_t>(floats, 1) * sizeof(float)));
    pool_all_[p] = floats;
    pool_bytes_ += floats * sizeof(float);
    return p;
}

void Zero3Store::release(float* buf) {
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_free_.emplace(pool_all_.at(buf), buf);
}

int Zero3Store::next_unit(int unit) const {
    const int L = num_units_ - 1;  // the globals unit; blocks are 0..L-1
    if (L == 0) return -1;
    if (pass_ == Pass::forward) return unit == L ? 0 : (unit < L - 1 ? unit + 1 : -1);
    return unit == L ? L - 1 : (unit > 0 ? unit - 1 : -1);
}

void Zero3Store::request_gather(int unit) {
    const ShardUnit& u = shards_.units[unit];
    float* buf = acquire(u.full);
    Gathered& g = gathered_[unit];
    g.buf = buf;
    g.ticket = comm_.push([this, buf, &u] { collective_.all_gather(buf, params_ + u.shard_offset, u.piece); });
}

const float* Zero3Store::params(int unit) {
    Gathered& g = gathered_[unit];
    if (g.ticket == 0) request_gather(unit);
    const int next = next_unit(unit);
    if (next >= 0 && gathered_[next].ticket == 0) request_gather(next);  // prefetch, overlaps this unit's compute
    comm_.wait(g.ticket);
    return g.buf;
}

void Zero3Store::params_done(int unit) {
    Gathered& g = gathered_[unit];
    if (g.ticket == 0) return;
    comm_.wait(g.ticket);
    release(g.buf);
    g = Gathered{};
}

float* Zero3Store::grads(int unit) {
    if (unit_grads_[unit] == nullptr) {
        const std::size_t floats = shards_.units[unit].full;
        unit_grads_[unit] = acquire(floats);
        backend_.zero(unit_grads_[unit], floats);
    }
    return unit_grads_[unit];
}

void Zero3Store::grads_done(int unit) {
    float* buf = unit_grads_[unit];
    if (buf == nullptr) return;
    unit_grads_[unit] = nullptr;
    const ShardUnit& u = shards_.units[unit];
    comm_.push([this, buf, &u] {
        collective_.reduce_scatter_sum(piece_scratch_, buf, u.piece);
        float* g = grads_ + u.shard_offset;
        backend_.residual_forward(g, g, piece_scratch_, u.piece);  // shard grads += this micro-batch's sum
        release(buf);
    });
}

void Zero3Store::zero_grads() {
    comm_.drain();
    backend_.zero(grads_, shards_.shard_size);
}

void Zero3Store::scatter_from_host(std::span<const float> full, float* shard) {
    if (full.size() != layout_.num_params())
        throw Error("ZeRO-3: expected a full vector of " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(full.size()));
    for (const ShardRange& r : shards_.ranges)
        if (r.size > 0) backend_.upload(shard + r.shard_offset, full.data() + r.begin, r.size * sizeof(float));
}

void Zero3Store::gather_to_host(const float* shard, std::span<float> full) {
    if (!full.empty() && full.size() != layout_.num_params())
        throw Error("ZeRO-3: expected a full vector of " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(full.size()));
    comm_.run([&] {
        for (const ShardUnit& u : shards_.units) {
            float* buf = acquire(u.full);
            collective_.all_gather(buf, shard + u.shard_offset, u.piece);
            if (!full.empty()) backend_.download(full.data() + u.begin, buf, u.size * sizeof(float));
            release(buf);
        }
    });
}

// Each rank's sum of squares travels as two floats (hi + lo carries a double to ~2^-48) and every
// rank adds them in rank order in double, so all ranks get the same norm, equal to the unsharded one
// up to the order of a double sum.
double Zero3Store::global_sum_squares() {
    const double local = backend_.sum_squares(grads_, shards_.shard_size);
    const float pair[2] = {static_cast<float>(local), static_cast<float>(local - static_cast<float>(local))};
    float* send = piece_scratch_;
    float* recv = piece_scratch_ + 2;
    backend_.upload(send, pair, sizeof(pair));
    collective_.all_gather(recv, send, 2);
    std::vector<float> all(2 * static_cast<std::size_t>(world_));
    backend_.download(all.data(), recv, all.size() * sizeof(float));
    double total = 0.0;
    for (int q = 0; q < world_; ++q) total += static_cast<double>(all[2 * q]) + static_cast<double>(all[2 * q + 1]);
    return total;
}

float Zero3Store::adamw_step(float lr, const AdamWConfig& c) {
    double sum_squares = 0.0;
    comm_.run([&] { sum_squares = global_sum_squares(); });  // runs after every queued reduce-scatter
    const float norm = static_cast<float>(std::sqrt(sum_squares));
    const float scale = clip_scale(norm, c);
    ++steps_;
    for (const ShardDecayRange& r : shards_.decay)
        backend_.adamw_update(params_ + r.shard_offset, grads_ + r.shard_offset, m_ + r.shard_offset,
                              v_ + r.shard_offset, r.size, lr, c.beta1, c.beta2, c.eps, r.decay ? c.weight_decay : 0.0f,
                              scale, steps_);
    return norm;
}

DeviceMemory Zero3Store::memory() const {
    DeviceMemory m;
    m.params_bytes = shards_.shard_size * sizeof(float);
    m.grads_bytes = m.params_bytes;
    m.optimizer_bytes = 2 * m.params_bytes;
    std::lock_guard<std::mutex> lock(pool_mu_);
    m.gathered_bytes = pool_bytes_;
    return m;
}

}  // namespace arch
