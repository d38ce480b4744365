// core/zero3.h: ZeRO-3 ParamStore: each of an island's N devices holds only its 1/N shard of the
// parameters, the gradients and AdamW's m and v. Every unit (block or globals, see param_store.h) is
// split into N equal pieces of ceil(size/N) floats (the last padded with zeros); rank r owns piece r of
// every unit, so its shard is one range of the flat vector per unit (shard_ranges()), stored back to
// back in the shard buffers. params(unit) all-gathers the unit (and queues the gather of the next unit
// in the pass order, a prefetch), params_done frees it; grads(unit) is a zeroed full-unit buffer that
// grads_done reduce-scatters (sums) into the shard gradients on the CommThread. Collectives all run
// on that thread, in the same order on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <vector>

#include "core/adamw.h"
#include "core/backend.h"
#include "core/collective.h"
#include "core/comm_thread.h"
#include "core/device_memory.h"
#include "core/param_store.h"
#include "core/shard_layout.h"

namespace arch {

class Zero3Store final : public ParamStore {
public:
    enum class Pass { forward, backward };  // decides which unit is prefetched next

    Zero3Store(const ParamLayout& layout, Backend& backend, Collective& collective);
    ~Zero3Store() override;
    Zero3Store(const Zero3Store&) = delete;
    Zero3Store& operator=(const Zero3Store&) = delete;

    void begin_pass(Pass pass) { pass_ = pass; }
    const float* params(int unit) override;
    void params_done(int unit) override;
    float* grads(int unit) override;
    void grads_done(int unit) override;
    void zero_grads() override;
    void wait_grads() { comm_.drain(); }  // every queued reduce-scatter done; rethrows failures

    // The shard.
    const std::vector<ShardRange>& shard_ranges() const { return shards_.ranges; }  // one per unit, some may be empty
    std::size_t shard_floats() const { return shards_.shard_size; }  // size of the shard buffers, padding included
    float* shard_params() { return params_; }
    float* shard_m() { return m_; }
    float* shard_v() { return v_; }

    // This rank's slices of a full host vector (ParamLayout order) into a shard buffer; no communication.
    void scatter_from_host(std::span<const float> full, float* shard);
    // Collective (every rank calls it): all-gathers a shard buffer; host (full size) may be empty
    // on ranks that do not need the result.
    void gather_to_host(const float* shard, std::span<float> full);

    // Collective: clips by the global gradient norm (equal to the unsharded norm) and runs AdamW on
    // this rank's shard; returns the norm before clipping. The same on every rank.
    float adamw_step(float lr, const AdamWConfig& config);
    int steps_taken() const { return steps_; }
    void set_steps_taken(int steps) { steps_ = steps; }

    DeviceMemory memory() const;

private:
    struct Gathered {
        float* buf = nullptr;
        std::uint64_t ticket = 0;  // the gather job; 0 = not requested
    };
    void request_gather(int unit);
    int next_unit(int unit) const;
    float* acquire(std::size_t floats);  // a full-unit buffer from the pool
    void release(float* buf);
    double global_sum_squares();  // on the comm thread

    const ParamLayout& layout_;
    Backend& backend_;
    Collective& collective_;
    const ShardLayout shards_;
    const int world_, num_units_;
    float* params_ = nullptr;
    float* grads_ = nullptr;
    float* m_ = nullptr;
    float* v_ = nullptr;
    float* piece_scratch_ = nullptr;  // the comm thread's reduce-scatter output before it is added
    int steps_ = 0;
    Pass pass_ = Pass::forward;
    std::vector<Gathered> gathered_;     // per unit (compute thread only)
    std::vector<float*> unit_grads_;     // per unit (compute thread only)
    mutable std::mutex pool_mu_;
    std::multimap<std::size_t, float*> pool_free_;  // floats -> buffer
    std::map<float*, std::size_t> pool_all_;
    std::size_t pool_bytes_ = 0;
    CommThread comm_;  // destroyed first: no job outlives the buffers it uses
};

}  // namespace arch
