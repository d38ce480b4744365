// outer_optimizer/outer_optimizer.h: the outer optimizers of DiLoCo on flat fp32 spans.
// step(params, delta) takes the round's aggregated pseudo-gradient delta = theta_global - theta_island
// (so a positive delta moves params down, like a gradient). Element-wise, in a fixed order, without
// FMA contraction: every island that applies the same steps ends bit-identical on any thread count.
// Equations are stated at each class and in docs/codecs.md. State saves and loads as bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace arch::outer {

class OuterOptimizer {
public:
    virtual ~OuterOptimizer() = default;
    virtual std::string name() const = 0;
    // Applies one outer step; params and delta must both hold size() floats (else arch::Error).
    virtual void step(std::span<float> params, std::span<const float> delta) = 0;
    // The same step without the parameters: the state moves and `delta` becomes the change of the
    // parameters, so params + delta is, bit for bit, what step(params, delta) leaves. A host takes the
    // step and sends the change; whoever applies it needs no optimizer state (docs/protocol.md).
    virtual void take_step(std::span<float> delta) = 0;
    virtual std::size_t size() const = 0;
    virtual std::uint64_t steps() const = 0;  // outer steps applied so far
    // The learning rate of the next step (an outer lr schedule sets it before each step; it is a
    // hyper-parameter, not state, so every island computes the same value from steps()).
    virtual void set_lr(float lr) = 0;
    // Whether step(params, delta) would leave every parameter finite. Changes nothing: a caller
    // checks first and steps only then, so it needs no copy of the state to go back to.
    virtual bool step_stays_finite(std::span<const float> params, std::span<const float> delta) const = 0;
    // State (step count and buffers, not hyper-parameters) as self-describing bytes, state_size() of
    // them: handed to `put` in order, in pieces that are views of the buffers themselves (a checkpoint
    // writes them where they lie), or written in place into exactly state_size() bytes. load_state
    // validates magic, version, kind, sizes and finiteness, and throws arch::Error leaving the
    // optimizer unchanged on any mismatch.
    virtual std::size_t state_size() const = 0;
    virtual void write_state(const std::function<void(std::span<const std::byte>)>& put) const = 0;
    virtual void load_state(std::span<const std::byte> bytes) = 0;
    void save_state(std::span<std::byte> out) const;
    std::vector<std::byte> save_state() const {
        std::vector<std::byte> out(state_size());
        save_state(out);
        return out;
    }
};

// torch.optim.SGD(lr, momentum=mu, nesterov=True) exactly (dampening 0, weight decay 0):
//   m <- mu * m + delta            (torch's first step sets m = delta, which equals mu*0 + delta)
//   theta <- theta - lr * (delta + mu * m)
// Rounded as torch's CPU kernels do: mu*m rounded, then + delta rounded, etc.
// lr = 1, mu = 0 is plain averaging: theta <- theta - delta = the mean of the islands' models.
struct NesterovOptions {
    float lr = 0.7f;
    float momentum = 0.9f;
};

class Nesterov final : public OuterOptimizer {
public:
    Nesterov(std::size_t n, NesterovOptions options = {});
    std::string name() const override;
    void step(std::span<float> params, std::span<const float> delta) override;
    void take_step(std::span<float> delta) override;
    bool step_stays_finite(std::span<const float> params, std::span<const float> delta) const override;
    std::size_t size() const override { return m_.size(); }
    std::uint64_t steps() const override { return steps_; }
    std::size_t state_size() const override;
    void write_state(const std::function<void(std::span<const std::byte>)>& put) const override;
    void load_state(std::span<const std::byte> bytes) override;
    void set_lr(float lr) override { options_.lr = lr; }
    std::span<const float> momentum() const { return m_; }
    const NesterovOptions& options() const { return options_; }

private:
    template <class Put>
    void advance(const float* delta, Put put);  // the step's arithmetic: put(i, change of parameter i)

    NesterovOptions options_;
    std::vector<float> m_;
    std::uint64_t steps_ = 0;
};

// Plain averaging: Nesterov with lr 1 and momentum 0.
Nesterov make_averaging(std::size_t n);

// Delayed Nesterov (Liu et al., "Asynchronous Local-SGD Training for Language Modeling",
// arXiv 2401.09135, Algorithm "DN"), for asynchronous rounds where each arriving delta is applied at
// once. With period N, momentum beta, lr eps and c in [0, 1/N] (c = 0 in the paper's experiments),
// at server step t (0-based) with pseudo-gradient g_t and buffer B (initially 0):
//   B <- B + g_t
//   if (t + 1) % N == 0:   m <- beta m + B / N
//                          theta <- theta - eps ((1 - c N + c) beta m + g_t / N);   B <- 0
//   else:                  theta <- theta - eps (c beta m + g_t / N)
// So momentum only moves every N steps, and in between deltas are plain (scaled) gradient steps.
// With N = 1 this is exactly Nesterov above.
struct DelayedNesterovOptions {
    float lr = 0.7f;
    float momentum = 0.9f;
    std::uint32_t period = 1;  // N >= 1, typically the number of islands
    float c = 0.0f;
};

class DelayedNesterov final : public OuterOptimizer {
public:
    DelayedNesterov(std::size_t n, DelayedNesterovOptions options);
    std::string name() const override;
    void step(std::span<float> params, std::span<const float> delta) override;
    void take_step(std::span<float> delta) override;
    bool step_stays_finite(std::span<const float> params, std::span<const float> delta) const override;
    std::size_t size() const override { return m_.size(); }
    std::uint64_t steps() const override { return steps_; }
    std::size_t state_size() const override;
    void write_state(const std::function<void(std::span<const std::byte>)>& put) const override;
    void load_state(std::span<const std::byte> bytes) override;
    void set_lr(float lr) override { options_.lr = lr; }
    std::span<const float> momentum() const { return m_; }
    std::span<const float> buffer() const { return buffer_; }

private:
    template <class Put>
    void advance(const float* delta, Put put);  // the step's arithmetic: put(i, change of parameter i)

    DelayedNesterovOptions options_;
    std::vector<float> m_, buffer_;
    std::uint64_t steps_ = 0;
};

// The outer learning rate of update t (0-based): a linear warmup over `warmup` updates from
// lr / warmup to lr, then a cosine decay from lr to `final_lr` that ends at update total - 1
// (Covenant-72B decays 1.0 to 0.65). final_lr < 0 or total = 0: no decay.
struct OuterLrSchedule {
    float lr = 0.7f;
    float final_lr = -1.0f;
    std::uint64_t warmup = 0;
    std::uint64_t total = 0;
};
float outer_lr_at(const OuterLrSchedule& s, std::uint64_t t);

}  // namespace arch::outer
