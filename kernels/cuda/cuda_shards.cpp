// kernels/cuda/cuda_shards.cpp: CudaShards: the shard buffers, gathers with prefetch, reduce-scatters,
// the pool of full-unit buffers, and AdamW on the shard.
#include "kernels/cuda/cuda_shards.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/param_store.h"

namespace arch::cuda {

uint64_t rounding_seed(uint64_t base, int step, std::size_t run_begin) {
    return base ^ (static_cast<uint64_t>(step) * 0x9E3779B97F4A7C15ull) ^ (static_cast<uint64_t>(run_begin) << 1);
}

namespace {

// bf16 pieces travel as float pairs through the float collectives (a gather copies bits).
float* as_floats(void* p) { return static_cast<float*>(p); }

}  // namespace

CudaShards::CudaShards(const ParamLayout& layout, Collective& collective, cudaStream_t stream,
                       uint64_t rounding_base, bool offload)
    : layout_(layout),
      collective_(collective),
      stream_(stream),
      rounding_base_(rounding_base),
      shards_(layout, collective.world_size(), collective.rank(), 2),
      num_units_(num_units(layout)) {
    check(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking), "cudaStreamCreate (comm)");
    const std::size_t n = shards_.shard_size, N = static_cast<std::size_t>(shards_.world);
    params_ = DeviceBuffer(n * sizeof(bf16));
    grads_ = DeviceBuffer(n * sizeof(float));
    if (offload) {
        std::vector<std::pair<std::size_t, std::size_t>> pieces;  // streamed one unit's piece at a time
        for (const ShardUnit& u : shards_.units) pieces.emplace_back(u.shard_offset, u.piece);
        host_ = std::make_unique<HostAdamW>(n, shards_.decay, std::move(pieces), stream_, rounding_base_);
    } else {
        master_ = DeviceBuffer(n * sizeof(float));
        m_ = DeviceBuffer(n * sizeof(float));
        v_ = DeviceBuffer(n * sizeof(float));
    }
    piece_scratch_ = DeviceBuffer(std::max(shards_.max_piece, 2 * N + 2) * sizeof(float));
    norm_partials_ = DeviceBuffer(kSumSquaresPartials * sizeof(double));
    gathered_.resize(num_units_);
    unit_grads_.resize(num_units_);
}

CudaShards::~CudaShards() {
    try {
        comm_.drain();
    } catch (...) {  // already reported to whoever waited on the failed job
    }
    cudaStreamSynchronize(stream_);
    host_.reset();
    for (auto& [p, info] : pool_all_) {
        cudaFree(p);
        cudaEventDestroy(info.second);
    }
    cudaStreamDestroy(comm_stream_);
}

CudaShards::Buffer CudaShards::acquire(std::size_t bytes) {
    Buffer b;
    {
        std::lock_guard<std::mutex> lock(pool_mu_);
        auto it = pool_free_.find(bytes);
        if (it != pool_free_.end()) {
            b = it->second;
            pool_free_.erase(it);
        }
    }
    if (b.ptr != nullptr) {
        check(cudaEventSynchronize(b.given_back), "cudaEventSynchronize (unit buffer)");
        return b;
    }
    check(cudaMalloc(&b.ptr, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes (ZeRO-3 unit)").c_str());
    check(cudaEventCreateWithFlags(&b.given_back, cudaEventDisableTiming), "cudaEventCreate");
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_all_[b.ptr] = {bytes, b.given_back};
    pool_bytes_ += bytes;
    return b;
}

void CudaShards::give_back(Buffer buf, bool record) {
    if (record) check(cudaEventRecord(buf.given_back, stream_), "cudaEventRecord (unit buffer)");
    std::lock_guard<std::mutex> lock(pool_mu_);
    pool_free_.emplace(pool_all_.at(buf.ptr).first, buf);
}

int CudaShards::next_unit(int unit) const {
    const int L = num_units_ - 1;  // the globals unit; blocks are 0..L-1
    if (L == 0) return -1;
    if (!backward_) return unit == L ? 0 : (unit < L - 1 ? unit + 1 : -1);
    return unit == L ? L - 1 : (unit > 0 ? unit - 1 : -1);
}

void CudaShards::begin_pass(bool backward) { backward_ = backward; }

// The buffer is taken on the comm thread, so waiting for the compute stream to be done with it (its
// event) never holds up the launches of the compute thread; g.buf is read only after the ticket.
void CudaShards::request_gather(int unit) {
    const ShardUnit& u = shards_.units[unit];
    Gathered& g = gathered_[unit];
    const bf16* src = params_.as<bf16>() + u.shard_offset;
    g.ticket = comm_.push([this, &g, src, &u] {
        g.buf = acquire(u.full * sizeof(bf16));
        collective_.all_gather(as_floats(g.buf.ptr), reinterpret_cast<const float*>(src), u.piece / 2);
    });
}

void CudaShards::enter(int unit) {
    if (gathered_[unit].ticket == 0) request_gather(unit);
    const int next = next_unit(unit);
    if (next >= 0 && gathered_[next].ticket == 0) request_gather(next);  // overlaps this unit's compute
    comm_.wait(gathered_[unit].ticket);
    if (backward_ && unit_grads_[unit].ptr == nullptr) {
        const std::size_t bytes = shards_.units[unit].full * sizeof(float);
        unit_grads_[unit] = acquire(bytes);
        check(cudaMemsetAsync(unit_grads_[unit].ptr, 0, bytes, stream_), "cudaMemset (unit gradients)");
    }
}

void CudaShards::leave(int unit) {
    Gathered& g = gathered_[unit];
    if (g.ticket != 0) {
        comm_.wait(g.ticket);
        give_back(g.buf, true);
        g = Gathered{};
    }
    Buffer buf = unit_grads_[unit];
    if (buf.ptr == nullptr) return;
    unit_grads_[unit] = Buffer{};
    check(cudaEventRecord(buf.given_back, stream_), "cudaEventRecord (unit gradients)");  // written by then
    const ShardUnit& u = shards_.units[unit];
    comm_.push([this, buf, &u] {
        check(cudaEventSynchronize(buf.given_back), "cudaEventSynchronize (unit gradients)");
        float* piece = piece_scratch_.as<float>();
        collective_.reduce_scatter_sum(piece, as_floats(buf.ptr), u.piece);
        add(grads_.as<float>() + u.shard_offset, piece, u.piece, comm_stream_);  // += this micro-batch's sum
        check(cudaStreamSynchronize(comm_stream_), "cudaStreamSynchronize (comm)");
        give_back(buf, false);
    });
}

const bf16* CudaShards::weights(std::size_t flat) {
    const int unit = shards_.unit_of(flat);
    Gathered& g = gathered_[unit];
    if (g.ticket == 0)
        throw Error("ZeRO-3: the weights at " + std::to_string(flat) + " (unit " + std::to_string(unit) +
                    ") were read outside the unit's use");
    comm_.wait(g.ticket);
    return static_cast<const bf16*>(g.buf.ptr) + (flat - shards_.units[unit].begin);
}

float* CudaShards::grads(std::size_t flat) {
    const int unit = shards_.unit_of(flat);
    if (unit_grads_[unit].ptr == nullptr)
        throw Error("ZeRO-3: the gradients at " + std::to_string(flat) + " (unit " + std::to_string(unit) +
                    ") were written outside the unit's backward");
    return static_cast<float*>(unit_grads_[unit].ptr) + (flat - shards_.units[unit].begin);
}

void CudaShards::zero_grads() {
    comm_.drain();
    check(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream_), "cudaMemset (shard gradients)");
}

void CudaShards::set_params(std::span<const float> full) {
    comm_.drain();
    if (host_) {
        for (const ShardRange& r : shards_.ranges)
            std::copy(full.begin() + r.begin, full.begin() + r.begin + r.size, host_->master().begin() + r.shard_offset);
        host_->upload_weights(params_.as<bf16>(), 0);
        return;
    }
    for (const ShardRange& r : shards_.ranges)
        if (r.size > 0)
            check(cudaMemcpyAsync(master_.as<float>() + r.shard_offset, full.data() + r.begin, r.size * sizeof(float),
                                  cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpy (parameter shard)");
    to_bf16(params_.as<bf16>(), master_.as<float>(), shards_.shard_size, stream_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaShards::set_moments(std::span<const float> m, std::span<const float> v, int steps) {
    comm_.drain();
    if (host_) {
        for (const ShardRange& r : shards_.ranges) {
            std::copy(m.begin() + r.begin, m.begin() + r.begin + r.size, host_->m().begin() + r.shard_offset);
            std::copy(v.begin() + r.begin, v.begin() + r.begin + r.size, host_->v().begin() + r.shard_offset);
        }
        steps_ = steps;
        if (steps_ > 0) round_shard(steps_);
        return;
    }
    for (const ShardRange& r : shards_.ranges) {
        if (r.size == 0) continue;
        check(cudaMemcpyAsync(m_.as<float>() + r.shard_offset, m.data() + r.begin, r.size * sizeof(float),
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (m shard)");
        check(cudaMemcpyAsync(v_.as<float>() + r.shard_offset, v.data() + r.begin, r.size * sizeof(float),
                              cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (v shard)");
    }
    steps_ = steps;
    // The bf16 weights the last update wrote, so a resumed run continues bit for bit.
    if (steps_ > 0) round_shard(steps_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaShards::round_shard(int step) {
    if (host_) {
        host_->upload_weights(params_.as<bf16>(), step);
        return;
    }
    for (const ShardDecayRange& r : shards_.decay)
        stochastic_round_bf16(params_.as<bf16>() + r.shard_offset, master_.as<float>() + r.shard_offset, r.size,
                              rounding_seed(rounding_base_, step, r.run_begin), stream_, r.from_run_start);
}

void CudaShards::gather(const float* shard, std::span<float> full) {
    if (!full.empty() && full.size() != layout_.num_params())
        throw Error("ZeRO-3: expected a full vector of " + std::to_string(layout_.num_params()) + " floats, got " +
                    std::to_string(full.size()));
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    comm_.run([&] {
        for (const ShardUnit& u : shards_.units) {
            Buffer buf = acquire(u.full * sizeof(float));
            collective_.all_gather(as_floats(buf.ptr), shard + u.shard_offset, u.piece);
            if (!full.empty())
                check(cudaMemcpy(full.data() + u.begin, buf.ptr, u.size * sizeof(float), cudaMemcpyDeviceToHost),
                      "cudaMemcpy (gathered unit)");
            give_back(buf, false);
        }
    });
}

float CudaShards::adamw_step(float lr, const AdamWConfig& c) {
    comm_.drain();
    // Each rank's sum of squares travels as two floats (hi + lo carries a double to ~2^-48), added
    // by every rank in rank order in double: the same norm everywhere.
    const double local = sum_squares(grads_.as<float>(), shards_.shard_size, norm_partials_.as<double>(), stream_);
    const float pair[2] = {static_cast<float>(local), static_cast<float>(local - static_cast<float>(local))};
    std::vector<float> all(2 * static_cast<std::size_t>(shards_.world));
    comm_.run([&] {
        float* send = piece_scratch_.as<float>();
        float* recv = send + 2;
        check(cudaMemcpy(send, pair, sizeof(pair), cudaMemcpyHostToDevice), "cudaMemcpy (norm)");
        collective_.all_gather(recv, send, 2);
        check(cudaMemcpy(all.data(), recv, all.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (norm)");
    });
    double total = 0.0;
    for (int q = 0; q < shards_.world; ++q) total += static_cast<double>(all[2 * q]) + static_cast<double>(all[2 * q + 1]);
    const float norm = static_cast<float>(std::sqrt(total));
    const float scale = clip_scale(norm, c);  // throws on NaN/Inf before anything changes
    ++steps_;
    if (host_) {
        host_->step(grads_.as<float>(), params_.as<bf16>(), lr, c, scale, steps_);
        return norm;
    }
    for (const ShardDecayRange& r : shards_.decay)
        adamw_update(master_.as<float>() + r.shard_offset, params_.as<bf16>() + r.shard_offset,
                     grads_.as<float>() + r.shard_offset, m_.as<float>() + r.shard_offset,
                     v_.as<float>() + r.shard_offset, r.size, lr, c.beta1, c.beta2, c.eps,
                     r.decay ? c.weight_decay : 0.0f, scale, steps_, rounding_seed(rounding_base_, steps_, r.run_begin),
                     stream_, r.from_run_start);
    return norm;
}

ShardPayload CudaShards::encode_delta(std::span<const float> theta, std::string_view spec) {
    if (theta.size() != layout_.num_params())
        throw Error("encode_delta: θ has " + std::to_string(theta.size()) + " values, the model " +
                    std::to_string(layout_.num_params()));
    const std::size_t b = device_codec_block(spec), n = theta.size();
    const std::size_t U = shards_.units.size(), N = static_cast<std::size_t>(shards_.world);
    comm_.drain();
    // Δ on the shard (the padding stays 0 - 0).
    DeviceBuffer delta(std::max<std::size_t>(shards_.shard_size, 1) * sizeof(float));
    check(cudaMemsetAsync(delta.get(), 0, delta.bytes(), stream_), "cudaMemset (Δ shard)");
    for (const ShardRange& r : shards_.ranges)
        if (r.size > 0)
            check(cudaMemcpyAsync(delta.as<float>() + r.shard_offset, theta.data() + r.begin, r.size * sizeof(float),
                                  cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpy (θ shard)");
    DeviceBuffer scratch;
    subtract(delta.as<float>(), on_device(master_, host_ ? host_->master() : std::span<float>(), scratch),
             shards_.shard_size, stream_);
    // Every piece's first block, from every rank.
    DeviceBuffer heads_send(U * b * sizeof(float)), heads_recv(N * U * b * sizeof(float));
    check(cudaMemsetAsync(heads_send.get(), 0, heads_send.bytes(), stream_), "cudaMemset (heads)");
    for (std::size_t u = 0; u < U; ++u) {
        const ShardRange& r = shards_.ranges[u];
        check(cudaMemcpyAsync(heads_send.as<float>() + u * b, delta.as<float>() + r.shard_offset,
                              std::min(b, r.size) * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpy (head)");
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    comm_.run([&] { collective_.all_gather(heads_recv.as<float>(), heads_send.as<float>(), U * b); });
    std::vector<float> heads(N * U * b);
    check(cudaMemcpy(heads.data(), heads_recv.get(), heads_recv.bytes(), cudaMemcpyDeviceToHost), "cudaMemcpy (heads)");
    auto head_value = [&](std::size_t flat) {  // a value of another piece, within its first block
        const int u = shards_.unit_of(flat);
        const ShardUnit& su = shards_.units[u];
        const std::size_t q = (flat - su.begin) / su.piece, j = (flat - su.begin) % su.piece;
        if (j >= b) throw Error("encode_delta: a block reaches past the next piece's first block");
        return heads[(q * U + u) * b + j];
    };
    // The blocks that start in this rank's pieces, their values back to back.
    ShardPayload part;
    std::size_t total = 0;
    for (const ShardRange& r : shards_.ranges) {
        if (r.size == 0) continue;
        const std::size_t end = r.begin + r.size, k0 = (r.begin + b - 1) / b, k1 = (end + b - 1) / b;
        if (k0 < k1) {
            part.runs.push_back({k0, k1 - k0});
            total += std::min(k1 * b, n) - k0 * b;
        }
    }
    DeviceBuffer x(std::max<std::size_t>(total, 1) * sizeof(float));
    std::size_t at = 0;
    for (const ShardRange& r : shards_.ranges) {
        if (r.size == 0) continue;
        const std::size_t end = r.begin + r.size, k0 = (r.begin + b - 1) / b, k1 = (end + b - 1) / b;
        if (k0 >= k1) continue;
        const std::size_t own = end - k0 * b, stop = std::min(k1 * b, n);
        check(cudaMemcpyAsync(x.as<float>() + at, delta.as<float>() + r.shard_offset + (k0 * b - r.begin),
                              own * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpy (own blocks)");
        std::vector<float> tail;
        for (std::size_t i = end; i < stop; ++i) tail.push_back(head_value(i));
        if (!tail.empty())
            check(cudaMemcpyAsync(x.as<float>() + at + own, tail.data(), tail.size() * sizeof(float),
                                  cudaMemcpyHostToDevice, stream_),
                  "cudaMemcpy (block tails)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");  // tail is a local
        at += stop - k0 * b;
    }
    quantize_shard(spec, x.as<float>(), total, part, stream_);
    return part;
}

const float* CudaShards::on_device(const DeviceBuffer& own, std::span<const float> offloaded, DeviceBuffer& scratch) {
    if (!host_) return own.as<float>();
    scratch = DeviceBuffer(offloaded.size_bytes());
    check(cudaMemcpyAsync(scratch.get(), offloaded.data(), offloaded.size_bytes(), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (offloaded state)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return scratch.as<float>();
}

void CudaShards::gather_params(std::span<float> full) {
    DeviceBuffer scratch;
    gather(on_device(master_, host_ ? host_->master() : std::span<float>(), scratch), full);
}

void CudaShards::gather_moments(std::span<float> m, std::span<float> v) {
    DeviceBuffer scratch;
    gather(on_device(m_, host_ ? host_->m() : std::span<float>(), scratch), m);
    gather(on_device(v_, host_ ? host_->v() : std::span<float>(), scratch), v);
}

void CudaShards::read_slice(StateVector which, std::size_t offset, std::span<float> out) {
    comm_.drain();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    if (host_) {
        const std::span<float> from = which == StateVector::params ? host_->master()
                                      : which == StateVector::m    ? host_->m()
                                                                   : host_->v();
        for_each_shard_part(shards_.ranges, offset, out.size(), [&](std::size_t at, std::size_t in_shard, std::size_t n) {
            std::copy_n(from.begin() + in_shard, n, out.begin() + at);
        });
        return;
    }
    const float* from = which == StateVector::params ? master_.as<float>()
                        : which == StateVector::m    ? m_.as<float>()
                                                     : v_.as<float>();
    for_each_shard_part(shards_.ranges, offset, out.size(), [&](std::size_t at, std::size_t in_shard, std::size_t n) {
        check(cudaMemcpyAsync(out.data() + at, from + in_shard, n * sizeof(float), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpy (a slice of the shard)");
    });
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

void CudaShards::write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    comm_.drain();
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    for_each_shard_part(shards_.ranges, offset, m.size(), [&](std::size_t at, std::size_t in_shard, std::size_t n) {
        if (host_) {
            std::copy_n(m.begin() + at, n, host_->m().begin() + in_shard);
            std::copy_n(v.begin() + at, n, host_->v().begin() + in_shard);
            return;
        }
        check(cudaMemcpyAsync(m_.as<float>() + in_shard, m.data() + at, n * sizeof(float), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (m slice)");
        check(cudaMemcpyAsync(v_.as<float>() + in_shard, v.data() + at, n * sizeof(float), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (v slice)");
    });
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::size_t CudaShards::pool_bytes() const {
    std::lock_guard<std::mutex> lock(pool_mu_);
    return pool_bytes_;
}

void CudaShards::fill_memory(DeviceMemory& m) const {
    m.params_bytes = params_.bytes();
    m.grads_bytes = grads_.bytes();
    m.optimizer_bytes = master_.bytes() + m_.bytes() + v_.bytes();
    m.gathered_bytes = pool_bytes();
}

}  // namespace arch::cuda
