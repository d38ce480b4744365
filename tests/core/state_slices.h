// tests/core/state_slices.h: what the engine tests share to check an engine's slices of θ_i, m and v
// (InnerLoop::read_slice, write_moments_slice) against its whole vectors: read in slices of an odd
// length, so they cut across tensors and shards, they are get_params and get_adamw_state bit for bit;
// moments written in such slices leave the engine where set_adamw_state leaves a twin of it, and its
// next step is the twin's, bit for bit.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/inner_loop.h"

namespace state_slices {

// `a` and `b`: two engines in the same state (the same init and steps). Both take one more step.
inline void check(arch::InnerLoop& a, arch::InnerLoop& b, std::size_t slice = 997) {
    const std::size_t n = a.num_params();
    std::vector<float> p(n), m(n), v(n);
    a.get_params(p);
    a.get_adamw_state(m, v);
    auto read = [&](arch::StateVector which) {
        std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
        for (std::size_t at = 0; at < n; at += slice) {
            const bool read_it = a.read_slice(which, at, std::span(out).subspan(at, std::min(slice, n - at)));
            REQUIRE(read_it);
        }
        return out;
    };
    const auto same_bits = [](const std::vector<float>& x, const std::vector<float>& y) {
        return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
    };
    CHECK(same_bits(read(arch::StateVector::params), p));
    CHECK(same_bits(read(arch::StateVector::m), m));
    CHECK(same_bits(read(arch::StateVector::v), v));
    double norm = 0;
    for (const float x : m) norm += std::fabs(x);
    CHECK(norm > 0);  // a step was taken: the moments are not all zeros

    // New moments (as DES-LOC's mean would bring): into `a` a slice at a time, into `b` whole.
    std::vector<float> m2(n), v2(n);
    for (std::size_t i = 0; i < n; ++i) {
        m2[i] = 0.5f * m[i] - 1e-4f;
        v2[i] = 0.25f * v[i] + 1e-9f;
    }
    for (std::size_t at = 0; at < n; at += slice) {
        const std::size_t k = std::min(slice, n - at);
        const bool wrote = a.write_moments_slice(at, std::span(m2).subspan(at, k), std::span(v2).subspan(at, k));
        REQUIRE(wrote);
    }
    b.set_adamw_state(m2, v2);
    std::vector<float> ma(n), va(n);
    a.get_adamw_state(ma, va);
    CHECK(same_bits(ma, m2));
    CHECK(same_bits(va, v2));
    std::vector<float> pa(n);
    a.get_params(pa);
    CHECK(same_bits(pa, p));  // the weights are left as they were
    CHECK(a.steps_done() == b.steps_done());
    const float la = a.step(1e-3f).loss, lb = b.step(1e-3f).loss;
    CHECK(std::memcmp(&la, &lb, sizeof(float)) == 0);
    std::vector<float> pb(n);
    a.get_params(pa);
    b.get_params(pb);
    CHECK(same_bits(pa, pb));
}

// The same for two engines `make` gives (each from the same start), each trained `steps` steps first.
template <class Make>
void check_twins(Make&& make, int steps = 2) {
    auto a = make(), b = make();
    for (int s = 0; s < steps; ++s) {
        a->step();
        b->step();
    }
    check(*a, *b);
}

}  // namespace state_slices
