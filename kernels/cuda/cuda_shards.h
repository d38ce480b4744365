// kernels/cuda/cuda_shards.h: ZeRO-3 on GPUs: one rank's shard of a bf16 model (core/shard_layout.h's
// pieces): the bf16 weights the passes read, the fp32 master weights, gradients and AdamW m and v,
// all only this rank's 1/N (master, m and v in pinned host memory with offload). Before a unit (a block, or the globals) is used, its bf16 pieces are
// all-gathered into a pooled full-unit buffer, and the next unit in the pass's order is prefetched on
// the communication thread; in backward the unit's fp32 gradients go to a zeroed full-unit buffer
// that is reduce-scattered and added into the shard gradients when the unit is left. Semantics of the
// CPU ZeRO-3 (core/zero3.h), with GPU dtypes. Internal to kernels/cuda (CudaTransformer owns one).
//
// Streams: the passes run on the model's compute stream; collectives run on the comm thread (NCCL on
// its own stream, each op blocking that thread until done). A buffer given back after use is not
// handed out again before the compute stream has passed the point where it was given back (an event);
// a unit's gradients are reduce-scattered only after the compute stream has written them (an event).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "core/adamw.h"
#include "core/collective.h"
#include "core/comm_thread.h"
#include "core/device_memory.h"
#include "core/param_layout.h"
#include "core/shard_layout.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_codec.h"
#include "kernels/cuda/host_adamw.h"
#include "kernels/cuda/ops.h"

namespace arch::cuda {

class CudaShards {
  public:
    // stream: the model's compute stream; rounding_base: its stochastic-rounding seed (the rounding of
    // each shard piece uses its place in the whole vector, so sharded and whole models round alike).
    // offload: the master weights, m and v of the shard in pinned host memory (host_adamw.h), the
    // step on the CPU.
    CudaShards(const ParamLayout& layout, Collective& collective, cudaStream_t stream, uint64_t rounding_base,
               bool offload = false);
    ~CudaShards();
    CudaShards(const CudaShards&) = delete;
    CudaShards& operator=(const CudaShards&) = delete;

    // ---- the passes (compute thread) ----
    void begin_pass(bool backward);  // decides which unit is prefetched next
    // Makes the unit's weights present (gathering them if no prefetch did) and, in backward, gives it
    // a zeroed gradient buffer; queues the gather of the next unit.
    void enter(int unit);
    // Gives the weights back; in backward, queues the reduce-scatter of the unit's gradients.
    void leave(int unit);
    // The gathered weight / unit gradient at a flat ParamLayout index of an entered unit (the next
    // unit's weights too once its prefetch was queued: this waits for it).
    const bf16* weights(std::size_t flat);
    float* grads(std::size_t flat);
    void finish_grads() { comm_.drain(); }  // every queued reduce-scatter done; rethrows failures
    void zero_grads();

    // ---- state (compute thread; the gathers are collectives every rank calls) ----
    // This rank's slices of a full host vector into the master weights (and bf16 = round-to-nearest
    // of them), or into m / v. Local.
    void set_params(std::span<const float> full);
    void set_moments(std::span<const float> m, std::span<const float> v, int steps);
    // All-gathers the master weights / gradients / m and v; `full` may be empty on ranks that need
    // no result.
    void gather_params(std::span<float> full);
    void gather_grads(std::span<float> full) { gather(grads_.as<float>(), full); }
    void gather_moments(std::span<float> m, std::span<float> v);
    // Local (no collective): the parts of [offset, offset + out.size()) of the master weights, m or v
    // that this rank holds, into `out` (the rest left as it is); and m and v written where it holds
    // them, the step count and the bf16 weights kept.
    void read_slice(StateVector which, std::size_t offset, std::span<float> out);
    void write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v);
    // Global-norm clipping (the unsharded norm) and AdamW on the shard, rounding to bf16 as the whole
    // model would. Collective; returns the norm (the same on every rank).
    float adamw_step(float lr, const AdamWConfig& config);
    int steps() const { return steps_; }

    // The DiLoCo pseudo-gradient Δ = θ − θ_i formed on this rank's shard and quantized here: the
    // codec blocks that start in this rank's pieces (the few values they need from the next pieces
    // come from an all-gather of every piece's first block), so θ_i is never gathered anywhere.
    // Collective. device_codec.h's join_shard_payloads makes the wire bytes from every rank's part.
    ShardPayload encode_delta(std::span<const float> theta, std::string_view spec);

    std::size_t pool_bytes() const;  // the full-unit buffers (gathered weights, unit gradients)
    void fill_memory(DeviceMemory& m) const;  // the shard's categories and the pool as comm

  private:
    struct Buffer {
        void* ptr = nullptr;
        cudaEvent_t given_back = nullptr;  // recorded on the compute stream when given back
    };
    struct Gathered {
        Buffer buf;
        std::uint64_t ticket = 0;  // the gather job; 0 = not requested
    };
    Buffer acquire(std::size_t bytes);  // waits until the compute stream is done with it
    void give_back(Buffer buf, bool record);
    void request_gather(int unit);
    int next_unit(int unit) const;
    void gather(const float* shard, std::span<float> full);
    void round_shard(int step);  // bf16 weights = the stochastic rounding AdamW step `step` wrote
    // A shard-sized fp32 state buffer on the device: its own, or (offloaded) the host copy uploaded
    // into `scratch`.
    const float* on_device(const DeviceBuffer& own, std::span<const float> offloaded, DeviceBuffer& scratch);

    const ParamLayout& layout_;
    Collective& collective_;
    cudaStream_t stream_;       // compute
    cudaStream_t comm_stream_;  // the comm thread's own launches (adding reduce-scattered pieces)
    const uint64_t rounding_base_;
    const ShardLayout shards_;
    const int num_units_;
    DeviceBuffer params_, master_, grads_, m_, v_;  // master, m, v empty when offloaded
    std::unique_ptr<HostAdamW> host_;
    DeviceBuffer piece_scratch_;  // a reduce-scattered piece before it is added; the norm exchange
    DeviceBuffer norm_partials_;
    int steps_ = 0;
    bool backward_ = false;
    std::vector<Gathered> gathered_;  // per unit (compute thread only)
    std::vector<Buffer> unit_grads_;  // per unit (compute thread only)
    mutable std::mutex pool_mu_;
    std::multimap<std::size_t, Buffer> pool_free_;  // bytes -> buffer
    std::map<void*, std::pair<std::size_t, cudaEvent_t>> pool_all_;
    std::size_t pool_bytes_ = 0;
    CommThread comm_;  // destroyed first: no job outlives the buffers it uses
};

// The seed of the stochastic rounding after AdamW step `step` over the whole-vector decay run that
// starts at flat index `run_begin` (a fixed function, so a resumed run recomputes the same bf16).
uint64_t rounding_seed(uint64_t base, int step, std::size_t run_begin);

}  // namespace arch::cuda
