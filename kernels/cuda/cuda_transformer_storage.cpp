// kernels/cuda/cuda_transformer_storage.cpp: the two CudaStorage kinds: a full replica (device master
// weights and moments, or HostAdamW's in pinned host memory; DDP's per-unit all-reduce), and a ZeRO-3
// rank over CudaShards. The bf16 weights after every AdamW step are the stochastic rounding of the
// master weights, a pure function of the value, the step and the index, so both kinds round alike.
#include "kernels/cuda/cuda_transformer_storage.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/param_store.h"
#include "core/shard_layout.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ddp.h"
#include "kernels/cuda/cuda_shards.h"
#include "kernels/cuda/host_adamw.h"

namespace arch::cuda {

namespace {

// The whole model on this GPU. With offload the master weights, m and v live in HostAdamW (pinned
// host memory) and the step runs there; the GPU keeps the bf16 weights and fp32 gradients.
class ReplicaStorage final : public CudaStorage {
  public:
    ReplicaStorage(const ParamLayout& layout, const CudaModelOptions& options, cudaStream_t stream,
                   const std::function<void*(std::size_t)>& alloc)
        : n_(layout.num_params()), stream_(stream), rounding_base_(options.rounding_seed) {
        params_ = static_cast<bf16*>(alloc(n_ * sizeof(bf16)));
        grads_ = static_cast<float*>(alloc(n_ * sizeof(float)));
        norm_partials_ = static_cast<double*>(alloc(kSumSquaresPartials * sizeof(double)));
        ranges_ = decay_ranges(layout);
        if (options.offload == Offload::optimizer) {
            host_ = host_adamw(layout);
        } else {
            master_ = static_cast<float*>(alloc(n_ * sizeof(float)));
            m_ = static_cast<float*>(alloc(n_ * sizeof(float)));
            v_ = static_cast<float*>(alloc(n_ * sizeof(float)));
        }
        if (options.ddp != nullptr) ddp_ = std::make_unique<CudaDdpReducer>(layout, *options.ddp, stream_, grads_);
    }

    bool sharded() const override { return false; }

    void begin_pass(bool backward) override { backward_ = backward; }
    void enter(int unit) override {}
    void leave(int unit) override {
        if (ddp_ && backward_) ddp_->unit_done(unit);
    }
    const bf16* weights(std::size_t offset) override { return params_ + offset; }
    float* grads(std::size_t offset) override { return grads_ + offset; }
    void zero_grads() override {
        check(cudaMemsetAsync(grads_, 0, n_ * sizeof(float), stream_), "cudaMemset (gradients)");
    }
    void set_last_micro_batch(bool last) override {
        if (ddp_) ddp_->set_last_micro_batch(last);
    }
    void reduce_grads(Collective& collective) override;
    int ddp_reduces_queued() const override { return ddp_ ? ddp_->reduces_queued() : 0; }

    void set_params(std::span<const float> full) override;
    void get_params(std::span<float> full) override;
    void get_grads(std::span<float> full) override;
    void get_adamw_state(std::span<float> m, std::span<float> v) override;
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override;
    void read_slice(StateVector which, std::size_t offset, std::span<float> out) override;
    void write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override;
    float adamw_step(float lr, const AdamWConfig& c) override;
    int steps() const override { return steps_; }

    std::vector<std::byte> encode_delta(std::span<const float> theta, const std::string& spec) override;
    ShardPayload encode_shard_delta(std::span<const float>, const std::string&) override {
        throw Error("encode_shard_delta: this model is not a ZeRO-3 rank (use encode_delta)");
    }

    std::size_t fill_memory(DeviceMemory& m) const override {
        m.params_bytes = n_ * sizeof(bf16);  // the working copy the passes read
        m.grads_bytes = n_ * sizeof(float);
        m.optimizer_bytes = host_ ? 0 : 3 * n_ * sizeof(float);  // fp32 master weights, m and v (or on the host)
        // The five state buffers (or two with offload); the norm's partials count as workspace.
        return (host_ ? 1 : 4) * device_alloc_bytes(n_ * sizeof(float)) + device_alloc_bytes(n_ * sizeof(bf16));
    }

  private:
    std::unique_ptr<HostAdamW> host_adamw(const ParamLayout& layout) const;
    void sync() const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

    const std::size_t n_;
    cudaStream_t stream_;
    const uint64_t rounding_base_;
    bf16* params_ = nullptr;  // bf16 copy the passes read
    float* grads_ = nullptr;
    float* master_ = nullptr;  // fp32 master weights (null with offload)
    float* m_ = nullptr;
    float* v_ = nullptr;
    double* norm_partials_ = nullptr;
    std::vector<DecayRange> ranges_;   // AdamW's decay / no-decay runs
    std::unique_ptr<HostAdamW> host_;  // optimizer offload: master, m and v in pinned host memory
    std::unique_ptr<CudaDdpReducer> ddp_;  // DDP with the all-reduce in backward
    int steps_ = 0;
    bool backward_ = false;
};

std::unique_ptr<HostAdamW> ReplicaStorage::host_adamw(const ParamLayout& layout) const {
    std::vector<ShardDecayRange> runs;
    for (const DecayRange& r : ranges_) runs.push_back({r.begin, r.size, r.decay, r.begin, 0});
    std::vector<std::pair<std::size_t, std::size_t>> units;
    for (int u = 0; u < num_units(layout); ++u) units.emplace_back(unit_begin(layout, u), unit_size(layout, u));
    return std::make_unique<HostAdamW>(n_, std::move(runs), std::move(units), stream_, rounding_base_);
}

void ReplicaStorage::reduce_grads(Collective& collective) {
    if (ddp_) {
        ddp_->finish();  // every unit was all-reduced as backward left it
        return;
    }
    sync();  // backward's last launches have written the gradients
    collective.all_reduce_sum(grads_, n_);
}

void ReplicaStorage::set_params(std::span<const float> full) {
    if (host_) {
        std::copy(full.begin(), full.end(), host_->master().begin());
        host_->upload_weights(params_, 0);
        return;
    }
    check(cudaMemcpyAsync(master_, full.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (parameters)");
    to_bf16(params_, master_, n_, stream_);
    sync();
}

void ReplicaStorage::get_params(std::span<float> full) {
    if (full.size() != n_) throw Error("get_params: wrong buffer size");
    if (host_) {
        sync();
        std::copy(host_->master().begin(), host_->master().end(), full.begin());
        return;
    }
    check(cudaMemcpyAsync(full.data(), master_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (parameters)");
    sync();
}

void ReplicaStorage::get_grads(std::span<float> full) {
    if (full.size() != n_) throw Error("get_grads: wrong buffer size");
    check(cudaMemcpyAsync(full.data(), grads_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (gradients)");
    sync();
}

void ReplicaStorage::get_adamw_state(std::span<float> m, std::span<float> v) {
    if (m.size() != n_ || v.size() != n_) throw Error("get_adamw_state: wrong buffer size");
    if (host_) {
        std::copy(host_->m().begin(), host_->m().end(), m.begin());
        std::copy(host_->v().begin(), host_->v().end(), v.begin());
        return;
    }
    check(cudaMemcpyAsync(m.data(), m_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpy (m)");
    check(cudaMemcpyAsync(v.data(), v_, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream_), "cudaMemcpy (v)");
    sync();
}

void ReplicaStorage::set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) {
    if (host_) {
        std::copy(m.begin(), m.end(), host_->m().begin());
        std::copy(v.begin(), v.end(), host_->v().begin());
        steps_ = steps;
        // The bf16 weights the last update wrote, so a resumed run continues bit for bit.
        host_->upload_weights(params_, steps_);
        return;
    }
    check(cudaMemcpyAsync(m_, m.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (m)");
    check(cudaMemcpyAsync(v_, v.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (v)");
    steps_ = steps;
    // The bf16 weights the last update wrote (stochastic rounding is a pure function of the master
    // value, the step and the index), so a resumed run continues bit for bit.
    if (steps_ > 0)
        for (const DecayRange& r : ranges_)
            stochastic_round_bf16(params_ + r.begin, master_ + r.begin, r.size,
                                  rounding_seed(rounding_base_, steps_, r.begin), stream_);
    sync();
}

void ReplicaStorage::read_slice(StateVector which, std::size_t offset, std::span<float> out) {
    if (host_) {
        sync();
        const std::span<float> from = which == StateVector::params ? host_->master()
                                      : which == StateVector::m    ? host_->m()
                                                                   : host_->v();
        std::copy_n(from.begin() + offset, out.size(), out.begin());
        return;
    }
    const float* from = which == StateVector::params ? master_ : which == StateVector::m ? m_ : v_;
    check(cudaMemcpyAsync(out.data(), from + offset, out.size_bytes(), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy (a slice of the state)");
    sync();
}

void ReplicaStorage::write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    if (host_) {
        sync();
        std::copy(m.begin(), m.end(), host_->m().begin() + offset);
        std::copy(v.begin(), v.end(), host_->v().begin() + offset);
        return;
    }
    check(cudaMemcpyAsync(m_ + offset, m.data(), m.size_bytes(), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (m slice)");
    check(cudaMemcpyAsync(v_ + offset, v.data(), v.size_bytes(), cudaMemcpyHostToDevice, stream_), "cudaMemcpy (v slice)");
    sync();
}

float ReplicaStorage::adamw_step(float lr, const AdamWConfig& c) {
    const float norm = static_cast<float>(std::sqrt(sum_squares(grads_, n_, norm_partials_, stream_)));
    const float scale = clip_scale(norm, c);  // throws on NaN/Inf before anything changes
    ++steps_;
    if (host_) {
        host_->step(grads_, params_, lr, c, scale, steps_);
        return norm;
    }
    for (const DecayRange& r : ranges_)
        adamw_update(master_ + r.begin, params_ + r.begin, grads_ + r.begin, m_ + r.begin, v_ + r.begin, r.size, lr,
                     c.beta1, c.beta2, c.eps, r.decay ? c.weight_decay : 0.0f, scale, steps_,
                     rounding_seed(rounding_base_, steps_, r.begin), stream_);
    return norm;
}

std::vector<std::byte> ReplicaStorage::encode_delta(std::span<const float> theta, const std::string& spec) {
    if (!device_codec_supports(spec)) throw Error("encode_delta: '" + spec + "' has no device codec");
    // Δ = θ - θ_i in a transient device buffer: only the encoded bytes leave the GPU.
    DeviceBuffer delta(n_ * sizeof(float));
    check(cudaMemcpyAsync(delta.get(), theta.data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpy (theta)");
    if (host_) {  // the offloaded master weights, through a transient device copy
        DeviceBuffer master(n_ * sizeof(float));
        check(cudaMemcpyAsync(master.get(), host_->master().data(), n_ * sizeof(float), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (master)");
        subtract(delta.as<float>(), master.as<float>(), n_, stream_);
        sync();
    } else {
        subtract(delta.as<float>(), master_, n_, stream_);
    }
    return encode_on_device(spec, delta.as<float>(), n_, stream_);
}

// One rank's ZeRO-3 shard: every call goes to CudaShards, whose gathers are collectives.
class ShardedStorage final : public CudaStorage {
  public:
    ShardedStorage(const ParamLayout& layout, const CudaModelOptions& options, cudaStream_t stream)
        : shards_(layout, *options.zero3, stream, options.rounding_seed, options.offload == Offload::optimizer) {}

    bool sharded() const override { return true; }

    void begin_pass(bool backward) override { shards_.begin_pass(backward); }
    void enter(int unit) override { shards_.enter(unit); }
    void leave(int unit) override { shards_.leave(unit); }
    const bf16* weights(std::size_t offset) override { return shards_.weights(offset); }
    float* grads(std::size_t offset) override { return shards_.grads(offset); }
    void zero_grads() override { shards_.zero_grads(); }
    void reduce_grads(Collective&) override { shards_.finish_grads(); }

    void set_params(std::span<const float> full) override { shards_.set_params(full); }
    void get_params(std::span<float> full) override { shards_.gather_params(full); }
    void get_grads(std::span<float> full) override { shards_.gather_grads(full); }
    void get_adamw_state(std::span<float> m, std::span<float> v) override { shards_.gather_moments(m, v); }
    void set_adamw_state(std::span<const float> m, std::span<const float> v, int steps) override {
        shards_.set_moments(m, v, steps);
    }
    void read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        shards_.read_slice(which, offset, out);
    }
    void write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) override {
        shards_.write_moments_slice(offset, m, v);
    }
    float adamw_step(float lr, const AdamWConfig& c) override { return shards_.adamw_step(lr, c); }
    int steps() const override { return shards_.steps(); }

    std::vector<std::byte> encode_delta(std::span<const float>, const std::string&) override {
        throw Error("encode_delta: a ZeRO-3 rank encodes its shard (encode_shard_delta)");
    }
    ShardPayload encode_shard_delta(std::span<const float> theta, const std::string& spec) override {
        return shards_.encode_delta(theta, spec);
    }

    std::size_t fill_memory(DeviceMemory& m) const override {
        shards_.fill_memory(m);
        return 0;  // CudaShards allocates its own memory, none of the model's
    }

  private:
    CudaShards shards_;
};

}  // namespace

std::unique_ptr<CudaStorage> make_cuda_storage(const ParamLayout& layout, const CudaModelOptions& options,
                                               cudaStream_t stream, const std::function<void*(std::size_t)>& alloc) {
    if (options.zero3 != nullptr) return std::make_unique<ShardedStorage>(layout, options, stream);
    return std::make_unique<ReplicaStorage>(layout, options, stream, alloc);
}

}  // namespace arch::cuda
