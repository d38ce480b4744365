// core/param_store.h: where GPT2's passes find parameters and gradients, one *unit* at a time.
// A unit is a transformer block (0..L-1, each a contiguous range of the flat buffer) or the rest
// (unit L: wte, wpe, ln_f, also contiguous). FlatParamStore holds whole buffers (one device, DDP);
// a ZeRO-3 store gathers a unit just before it is used and reduce-scatters its gradients after.
// The pointer a store returns points at the unit's first float; ParamLayout offsets minus
// unit_begin() index inside it.
#pragma once

#include <cstddef>
#include <span>

#include "core/backend.h"
#include "core/param_layout.h"

namespace arch {

class ParamStore {
public:
    virtual ~ParamStore() = default;

    // Parameters of a unit; valid until params_done(unit). Forward asks for unit L first and keeps
    // it to the end (the classifier reuses wte); blocks are asked in order 0..L-1 (backward: L-1..0).
    virtual const float* params(int unit) = 0;
    virtual void params_done(int unit) {}
    // Gradients of a unit to accumulate into; valid until grads_done(unit), after which this backward
    // pass will not touch them again (DDP may start reducing them, ZeRO-3 reduce-scatters them).
    virtual float* grads(int unit) = 0;
    virtual void grads_done(int unit) {}
    virtual void zero_grads() = 0;
};

// Range [begin, begin + size) of a unit in the flat buffer.
std::size_t unit_begin(const ParamLayout& layout, int unit);
std::size_t unit_size(const ParamLayout& layout, int unit);
int num_units(const ParamLayout& layout);  // L + 1

// The whole flat parameter and gradient buffers on one device.
class FlatParamStore final : public ParamStore {
public:
    FlatParamStore(const ParamLayout& layout, Backend& backend);
    ~FlatParamStore() override;
    FlatParamStore(const FlatParamStore&) = delete;
    FlatParamStore& operator=(const FlatParamStore&) = delete;

    const float* params(int unit) override { return params_ + unit_begin(layout_, unit); }
    float* grads(int unit) override { return grads_ + unit_begin(layout_, unit); }
    void zero_grads() override { backend_.zero(grads_, layout_.num_params()); }

    float* all_params() { return params_; }
    float* all_grads() { return grads_; }

private:
    const ParamLayout& layout_;
    Backend& backend_;
    float* params_;
    float* grads_;
};

// Parameters read in place from a host buffer someone else owns, for forward passes only (a host
// evaluating its global θ without a copy of it): it holds no gradients, and asking for them throws.
// The buffer must stay put and unchanged while a forward pass runs; view() points at a new one.
class ViewParamStore final : public ParamStore {
public:
    explicit ViewParamStore(const ParamLayout& layout) : layout_(layout) {}

    void view(std::span<const float> params);  // exactly layout.num_params() floats
    const float* params(int unit) override;
    float* grads(int unit) override;
    void zero_grads() override {}

private:
    ParamLayout layout_;
    std::span<const float> params_;
};

}  // namespace arch
