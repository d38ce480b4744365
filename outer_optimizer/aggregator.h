// outer_optimizer/aggregator.h: turns the islands' pseudo-gradients of a round into one.
// All on flat spans of equal length, in a fixed reduction order (peers in the order given, norms
// summed in double over fixed chunks), so the result is the same on any thread count. Callers give
// contributions in a canonical order (e.g. by peer key) so every aggregator computes the same bits.
// Shardable: apart from the norms of NormClipping and CenteredClipping, every output element depends
// only on the same element of the inputs.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace arch::outer {

struct WeightedDelta {
    std::span<const float> delta;  // the island's pseudo-gradient
    double tokens = 1.0;           // tokens the island processed this round (weight), > 0
};

class Aggregator {
public:
    virtual ~Aggregator() = default;
    virtual std::string name() const = 0;
    // Writes the aggregate into out; every delta must hold out.size() floats (else arch::Error).
    virtual void aggregate(std::span<const WeightedDelta> in, std::span<float> out) = 0;
    // Each output coordinate depends only on that coordinate of the inputs (and the weights): the
    // aggregate of slices is then the slice of the aggregate, bit for bit, and a host may aggregate
    // Δs it holds encoded slice by slice (diloco::GlobalModel::make_update of HeldDeltas).
    virtual bool per_coordinate() const { return false; }
};

// out = sum_i w_i delta_i / sum_i w_i, w_i = tokens (summed in double, peers in order).
class WeightedMean final : public Aggregator {
public:
    bool per_coordinate() const override { return true; }
    std::string name() const override { return "mean"; }
    void aggregate(std::span<const WeightedDelta> in, std::span<float> out) override;
};

// Each delta_i scaled by min(1, tau / ||delta_i||_2), then the token-weighted mean.
// tau <= 0 means "the median of this round's norms" (needs no tuning; robust for f < n/2).
class NormClipping final : public Aggregator {
public:
    explicit NormClipping(double tau = 0.0) : tau_(tau) {}
    std::string name() const override;
    void aggregate(std::span<const WeightedDelta> in, std::span<float> out) override;

private:
    double tau_;
};

// Per coordinate: the median of the n values (mean of the two middle ones when n is even).
// Unweighted. With f < n/2 Byzantine inputs each coordinate stays within the honest values' range.
class CoordinateMedian final : public Aggregator {
public:
    bool per_coordinate() const override { return true; }
    std::string name() const override { return "median"; }
    void aggregate(std::span<const WeightedDelta> in, std::span<float> out) override;
};

// Per coordinate: drop the `trim` largest and `trim` smallest values, average the rest (unweighted).
// Needs n > 2 trim. With f <= trim Byzantine inputs each coordinate stays in the honest range.
class TrimmedMean final : public Aggregator {
public:
    bool per_coordinate() const override { return true; }
    explicit TrimmedMean(std::size_t trim = 1) : trim_(trim) {}
    std::string name() const override;
    void aggregate(std::span<const WeightedDelta> in, std::span<float> out) override;

private:
    std::size_t trim_;
};

// Centered clipping (Karimireddy, He, Jaggi, "Learning from History for Byzantine Robust
// Optimization", ICML 2021), iterated L times from v_0:
//   v_{l+1} = v_l + (1/n) sum_i (x_i - v_l) min(1, tau / ||x_i - v_l||_2)
// v_0 is the previous round's aggregate when `use_history` and one exists (the paper's choice),
// else the coordinate-wise median. tau <= 0: tau_l = median_i ||x_i - v_l|| each iteration.
// A Byzantine input moves v by at most tau/n per iteration.
class CenteredClipping final : public Aggregator {
public:
    explicit CenteredClipping(double tau = 0.0, int iterations = 3, bool use_history = false)
        : tau_(tau), iterations_(iterations), use_history_(use_history) {}
    std::string name() const override;
    void aggregate(std::span<const WeightedDelta> in, std::span<float> out) override;

private:
    double tau_;
    int iterations_;
    bool use_history_;
    std::vector<float> previous_;
};

// Makes an aggregator from a spec: "mean", "clip[:tau=X]", "median", "trimmed[:trim=K]",
// "centered_clip[:tau=X,iters=L,history=0|1]". Throws arch::Error on a bad spec.
std::unique_ptr<Aggregator> make_aggregator(std::string_view spec);

}  // namespace arch::outer
