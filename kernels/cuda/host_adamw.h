// kernels/cuda/host_adamw.h: optimizer offload (`--offload optimizer`): the fp32 master weights and
// AdamW m and v of a GPU model in pinned host memory, and the AdamW step on the CPU with kernels/cpu's
// AdamW. The step streams the model's fp32 gradients to the host one unit at a time through two
// pinned staging buffers (the next unit's copy overlaps this unit's CPU step), then writes the bf16
// weights back the same way, rounded stochastically with the GPU kernel's hash (bf16_math.h) so a
// resumed run continues bit for bit. Only the bf16 weights and the fp32 gradients stay on the GPU.
// Internal to kernels/cuda (CudaTransformer owns one when options.offload is set).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/adamw.h"
#include "core/shard_layout.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

class HostAdamW {
  public:
    // n values; ranges: AdamW's decay runs over them (offsets in shard_offset) with their place in
    // the whole vector for the rounding hash; chunks: (offset, size) pieces the step streams one at a
    // time, in order, covering [0, n).
    HostAdamW(std::size_t n, std::vector<ShardDecayRange> ranges, std::vector<std::pair<std::size_t, std::size_t>> chunks,
              cudaStream_t stream, uint64_t rounding_base);
    ~HostAdamW();
    HostAdamW(const HostAdamW&) = delete;
    HostAdamW& operator=(const HostAdamW&) = delete;

    std::span<float> master() { return {master_, n_}; }
    std::span<float> m() { return {m_, n_}; }
    std::span<float> v() { return {v_, n_}; }

    // AdamW step `step` (1-based) with gradients d_grads (device) times grad_scale, then d_params
    // (device bf16) = the stochastic rounding of the new master weights. Returns when done.
    void step(const float* d_grads, bf16* d_params, float lr, const AdamWConfig& config, float grad_scale, int step);
    // d_params = the master weights rounded to nearest (step 0: after set_params), or as AdamW step
    // `step` rounded them (a resumed run).
    void upload_weights(bf16* d_params, int step);


  private:
    template <class Fill>
    void stream_chunks(const float* d_grads, bf16* d_params, Fill fill);
    // bits[i - offset] = the stochastic rounding AdamW step `step` gives master[i], over the chunk.
    void round_chunk(std::size_t offset, std::size_t size, std::uint16_t* bits, int step) const;

    std::size_t n_;
    std::vector<ShardDecayRange> ranges_;
    std::vector<std::pair<std::size_t, std::size_t>> chunks_;
    cudaStream_t stream_;
    uint64_t rounding_base_;
    std::size_t staging_floats_ = 0;
    float* master_ = nullptr;
    float* m_ = nullptr;
    float* v_ = nullptr;
    float* staging_[2] = {nullptr, nullptr};
    cudaEvent_t copied_in_[2] = {nullptr, nullptr};   // a staging buffer's gradients have arrived
    cudaEvent_t copied_out_[2] = {nullptr, nullptr};  // a staging buffer's weights have left
};

}  // namespace arch::cuda
