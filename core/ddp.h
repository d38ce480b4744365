// core/ddp.h: data-parallel ParamStore: every device holds the whole flat parameters and gradients;
// on the last micro-batch of a step, grads_done(unit) hands that unit's contiguous gradient range (one
// bucket per unit) to the device's CommThread, which all-reduces it while backward goes on with the
// units below. Gradients are summed, not averaged: the island scales the loss by 1/(devices * accum).
// After wait_grads() every rank holds bit-identical gradients, so identical AdamW steps keep the
// parameters identical. It owns no optimizer state; the island runs AdamW on all_params/all_grads.
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "core/collective.h"
#include "core/comm_thread.h"
#include "core/device_memory.h"
#include "core/param_store.h"

namespace arch {

class DdpStore final : public ParamStore {
public:
    DdpStore(const ParamLayout& layout, Backend& backend, Collective& collective);
    ~DdpStore() override;
    DdpStore(const DdpStore&) = delete;
    DdpStore& operator=(const DdpStore&) = delete;

    const float* params(int unit) override { return params_ + unit_begin(layout_, unit); }
    float* grads(int unit) override { return grads_ + unit_begin(layout_, unit); }
    void grads_done(int unit) override;  // queues the unit's all-reduce when syncing
    void zero_grads() override { backend_.zero(grads_, layout_.num_params()); }

    // true for the backward pass of the last micro-batch of a step (earlier ones only accumulate).
    void set_sync(bool sync) { sync_ = sync; }
    // Blocks until every queued all-reduce is done; rethrows a communication failure.
    void wait_grads() { comm_.drain(); }

    float* all_params() { return params_; }
    float* all_grads() { return grads_; }
    DeviceMemory memory() const;  // params and grads; the island adds AdamW's m and v

private:
    const ParamLayout& layout_;
    Backend& backend_;
    Collective& collective_;
    float* params_;
    float* grads_;
    bool sync_ = true;
    CommThread comm_;  // last member: joined before the buffers go
};

}  // namespace arch
