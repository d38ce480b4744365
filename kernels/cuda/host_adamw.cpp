// kernels/cuda/host_adamw.cpp: HostAdamW: pinned state, the chunked copies and the CPU step.
#include "kernels/cuda/host_adamw.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_shards.h"

namespace arch::cuda {

namespace {

float* pinned(std::size_t floats, const char* what) {
    void* p = nullptr;
    check(cudaMallocHost(&p, std::max<std::size_t>(floats, 1) * sizeof(float)),
          (std::string("cudaMallocHost (") + what + ", " + std::to_string(floats * sizeof(float)) + " bytes)").c_str());
    std::memset(p, 0, std::max<std::size_t>(floats, 1) * sizeof(float));
    return static_cast<float*>(p);
}

}  // namespace

HostAdamW::HostAdamW(std::size_t n, std::vector<ShardDecayRange> ranges,
                     std::vector<std::pair<std::size_t, std::size_t>> chunks, cudaStream_t stream,
                     uint64_t rounding_base)
    : n_(n), ranges_(std::move(ranges)), chunks_(std::move(chunks)), stream_(stream), rounding_base_(rounding_base) {
    for (const auto& [offset, size] : chunks_) staging_floats_ = std::max(staging_floats_, size);
    master_ = pinned(n_, "master weights");
    m_ = pinned(n_, "AdamW m");
    v_ = pinned(n_, "AdamW v");
    for (int s = 0; s < 2; ++s) {
        staging_[s] = pinned(staging_floats_, "staging");
        check(cudaEventCreateWithFlags(&copied_in_[s], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventCreateWithFlags(&copied_out_[s], cudaEventDisableTiming), "cudaEventCreate");
    }
}

HostAdamW::~HostAdamW() {
    cudaStreamSynchronize(stream_);
    for (int s = 0; s < 2; ++s) {
        cudaEventDestroy(copied_in_[s]);
        cudaEventDestroy(copied_out_[s]);
        cudaFreeHost(staging_[s]);
    }
    for (float* p : {master_, m_, v_}) cudaFreeHost(p);
}

// For each chunk in order: its gradients to a staging buffer (when d_grads is given; the next chunk's
// copy is queued before this chunk's CPU work), fill(offset, size, staging) on the CPU, which leaves
// the chunk's bf16 bits at the start of the staging buffer, then those bits to d_params.
template <class Fill>
void HostAdamW::stream_chunks(const float* d_grads, bf16* d_params, Fill fill) {
    auto copy_in = [&](std::size_t c) {
        const int s = static_cast<int>(c % 2);
        check(cudaEventSynchronize(copied_out_[s]), "cudaEventSynchronize (staging free)");
        if (d_grads == nullptr) return;
        const auto [offset, size] = chunks_[c];
        check(cudaMemcpyAsync(staging_[s], d_grads + offset, size * sizeof(float), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpy (gradients to the host)");
        check(cudaEventRecord(copied_in_[s], stream_), "cudaEventRecord");
    };
    if (!chunks_.empty()) copy_in(0);
    for (std::size_t c = 0; c < chunks_.size(); ++c) {
        const int s = static_cast<int>(c % 2);
        if (c + 1 < chunks_.size()) copy_in(c + 1);
        if (d_grads != nullptr) check(cudaEventSynchronize(copied_in_[s]), "cudaEventSynchronize (gradients)");
        const auto [offset, size] = chunks_[c];
        fill(offset, size, staging_[s]);
        check(cudaMemcpyAsync(d_params + offset, staging_[s], size * sizeof(bf16), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpy (weights to the device)");
        check(cudaEventRecord(copied_out_[s], stream_), "cudaEventRecord");
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (offloaded step)");
}

void HostAdamW::step(const float* d_grads, bf16* d_params, float lr, const AdamWConfig& c, float grad_scale,
                     int step) {
    stream_chunks(d_grads, d_params, [&](std::size_t offset, std::size_t size, float* staging) {
        std::uint16_t* bits = reinterpret_cast<std::uint16_t*>(staging);
        for (const ShardDecayRange& r : ranges_) {  // the step over the chunk's part of each run
            const std::size_t a = std::max(offset, r.shard_offset), b = std::min(offset + size, r.shard_offset + r.size);
            if (a >= b) continue;
            cpu::adamw_update(master_ + a, staging + (a - offset), m_ + a, v_ + a, b - a, lr, c.beta1, c.beta2, c.eps,
                              r.decay ? c.weight_decay : 0.0f, grad_scale, step);
        }
        std::fill(bits, bits + size, std::uint16_t{0});  // padding (a shard's) stays 0
        round_chunk(offset, size, bits, step);  // over the gradients just used
    });
}

void HostAdamW::round_chunk(std::size_t offset, std::size_t size, std::uint16_t* bits, int step) const {
    for (const ShardDecayRange& r : ranges_) {
        const std::size_t a = std::max(offset, r.shard_offset), b = std::min(offset + size, r.shard_offset + r.size);
        const uint64_t seed = rounding_seed(rounding_base_, step, r.run_begin);
        for (std::size_t i = a; i < b; ++i)
            bits[i - offset] = float_to_bf16_bits_stochastic(master_[i], seed, r.from_run_start + (i - r.shard_offset));
    }
}

void HostAdamW::upload_weights(bf16* d_params, int step) {
    stream_chunks(nullptr, d_params, [&](std::size_t offset, std::size_t size, float* staging) {
        std::uint16_t* bits = reinterpret_cast<std::uint16_t*>(staging);
        for (std::size_t i = offset; i < offset + size; ++i) bits[i - offset] = float_to_bf16_bits(master_[i]);
        if (step > 0) round_chunk(offset, size, bits, step);
    });
}

}  // namespace arch::cuda
