// outer_optimizer/nesterov.cpp: Nesterov (torch.optim.SGD(nesterov=True)), plain averaging and
// Delayed Nesterov. Equations: outer_optimizer.h. Element-wise loops only: each element's result is
// independent of the thread count, so all islands stay bit-identical.
#include <cstring>
#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "outer_optimizer/outer_optimizer.h"
#include "outer_optimizer/state_bytes.h"

namespace arch::outer {
namespace {

void check_sizes(std::string_view who, std::size_t n, std::size_t params, std::size_t delta) {
    if (params != n || delta != n) {
        throw Error(std::string(who) + ": step got " + std::to_string(params) + " parameters and " +
                    std::to_string(delta) + " pseudo-gradient elements, expected " +
                    std::to_string(n) + " of each");
    }
}

std::string fmt(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(v));
    return buf;
}

}  // namespace

Nesterov::Nesterov(std::size_t n, NesterovOptions options) : options_(options), m_(n, 0.0f) {
    if (!(std::isfinite(options.lr) && std::isfinite(options.momentum) && options.momentum >= 0.0f)) {
        throw Error("nesterov: lr must be finite and momentum finite and >= 0");
    }
}

std::string Nesterov::name() const {
    return "nesterov:lr=" + fmt(options_.lr) + ",momentum=" + fmt(options_.momentum);
}

// One step's arithmetic, the state moved: put(i, change) gets parameter i's change, which the step
// adds (p + change is p + (-lr) * g, bit for bit), and take_step hands out.
template <class Put>
void Nesterov::advance(const float* d, Put put) {
    const float lr = options_.lr, mu = options_.momentum;
    const std::size_t n = m_.size();
    float* m = m_.data();
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
    for (std::size_t i = 0; i < n; ++i) {
        const float mi = mu * m[i] + d[i];  // buf.mul_(mu).add_(d)
        const float g = d[i] + mu * mi;      // d.add(buf, alpha=mu)
        m[i] = mi;
        put(i, (-lr) * g);                   // p.add_(g, alpha=-lr)
    }
    ++steps_;
}

void Nesterov::step(std::span<float> params, std::span<const float> delta) {
    check_sizes("nesterov", m_.size(), params.size(), delta.size());
    float* p = params.data();
    advance(delta.data(), [p](std::size_t i, float change) { p[i] = p[i] + change; });
}

void Nesterov::take_step(std::span<float> delta) {
    check_sizes("nesterov", m_.size(), m_.size(), delta.size());
    float* d = delta.data();
    advance(d, [d](std::size_t i, float change) { d[i] = change; });
}

bool Nesterov::step_stays_finite(std::span<const float> params, std::span<const float> delta) const {
    check_sizes("nesterov", m_.size(), params.size(), delta.size());
    const float lr = options_.lr, mu = options_.momentum;
    const std::size_t n = m_.size();
    const float* m = m_.data();
    const float* p = params.data();
    const float* d = delta.data();
    std::size_t bad = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : bad) if (n > (1 << 18))
    for (std::size_t i = 0; i < n; ++i) {  // step's arithmetic, nothing stored
        const float mi = mu * m[i] + d[i];
        const float g = d[i] + mu * mi;
        bad += !std::isfinite(p[i] + (-lr) * g);
    }
    return bad == 0;
}

std::size_t Nesterov::state_size() const { return detail::state_size(1, m_.size()); }

void Nesterov::write_state(const std::function<void(std::span<const std::byte>)>& put) const {
    const std::span<const float> arrays[] = {m_};
    detail::write_state(detail::StateKind::nesterov, steps_, arrays, put);
}

void Nesterov::load_state(std::span<const std::byte> bytes) {
    std::uint64_t steps = 0;
    auto a = detail::unpack_state(bytes, detail::StateKind::nesterov, m_.size(), 1, steps, "nesterov");
    m_ = std::move(a[0]);
    steps_ = steps;
}

void OuterOptimizer::save_state(std::span<std::byte> out) const {
    if (out.size() != state_size())
        throw Error("optimizer state needs " + std::to_string(state_size()) + " bytes, given " + std::to_string(out.size()));
    std::size_t at = 0;
    write_state([&](std::span<const std::byte> part) {
        std::memcpy(out.data() + at, part.data(), part.size());
        at += part.size();
    });
}

float outer_lr_at(const OuterLrSchedule& s, std::uint64_t t) {
    double lr = s.lr;
    if (s.final_lr >= 0 && s.total > 1) {
        const double progress = std::min(1.0, static_cast<double>(t) / static_cast<double>(s.total - 1));
        lr = s.final_lr + (s.lr - s.final_lr) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
    }
    if (t < s.warmup) lr = lr * static_cast<double>(t + 1) / static_cast<double>(s.warmup);
    return static_cast<float>(lr);
}

Nesterov make_averaging(std::size_t n) { return Nesterov(n, NesterovOptions{1.0f, 0.0f}); }

// ---- Delayed Nesterov ---------------------------------------------------------------------------
DelayedNesterov::DelayedNesterov(std::size_t n, DelayedNesterovOptions options)
    : options_(options), m_(n, 0.0f), buffer_(n, 0.0f) {
    if (options.period < 1) throw Error("delayed nesterov: period N must be >= 1");
    if (!(options.c >= 0.0f && options.c <= 1.0f / float(options.period))) {
        throw Error("delayed nesterov: c must be in [0, 1/N], got " + fmt(options.c));
    }
    if (!(std::isfinite(options.lr) && std::isfinite(options.momentum) && options.momentum >= 0.0f)) {
        throw Error("delayed nesterov: lr must be finite and momentum finite and >= 0");
    }
}

std::string DelayedNesterov::name() const {
    return "delayed_nesterov:lr=" + fmt(options_.lr) + ",momentum=" + fmt(options_.momentum) +
           ",period=" + std::to_string(options_.period) + ",c=" + fmt(options_.c);
}

// One step's arithmetic, the state moved: put(i, change) gets parameter i's change, -(lr * x), which
// the step adds (p + -(lr * x) is p - lr * x, bit for bit), and take_step hands out.
template <class Put>
void DelayedNesterov::advance(const float* d, Put put) {
    const float lr = options_.lr, beta = options_.momentum, c = options_.c;
    const float big_n = static_cast<float>(options_.period);
    const bool momentum_step = (steps_ + 1) % options_.period == 0;
    const float coeff = momentum_step ? (1.0f - c * big_n + c) * beta : c * beta;
    const std::size_t n = m_.size();
    float* m = m_.data();
    float* b = buffer_.data();
    if (momentum_step) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
        for (std::size_t i = 0; i < n; ++i) {
            const float bi = b[i] + d[i];
            const float mi = beta * m[i] + bi / big_n;
            const float change = -(lr * (coeff * mi + d[i] / big_n));
            m[i] = mi;
            b[i] = 0.0f;
            put(i, change);
        }
    } else {
#pragma omp parallel for simd schedule(static) if (n > (1 << 18))
        for (std::size_t i = 0; i < n; ++i) {
            const float change = -(lr * (coeff * m[i] + d[i] / big_n));
            b[i] = b[i] + d[i];
            put(i, change);
        }
    }
    ++steps_;
}

void DelayedNesterov::step(std::span<float> params, std::span<const float> delta) {
    check_sizes("delayed nesterov", m_.size(), params.size(), delta.size());
    float* p = params.data();
    advance(delta.data(), [p](std::size_t i, float change) { p[i] = p[i] + change; });
}

void DelayedNesterov::take_step(std::span<float> delta) {
    check_sizes("delayed nesterov", m_.size(), m_.size(), delta.size());
    float* d = delta.data();
    advance(d, [d](std::size_t i, float change) { d[i] = change; });
}

bool DelayedNesterov::step_stays_finite(std::span<const float> params, std::span<const float> delta) const {
    check_sizes("delayed nesterov", m_.size(), params.size(), delta.size());
    const float lr = options_.lr, beta = options_.momentum, c = options_.c;
    const float big_n = static_cast<float>(options_.period);
    const bool momentum_step = (steps_ + 1) % options_.period == 0;
    const float coeff = momentum_step ? (1.0f - c * big_n + c) * beta : c * beta;
    const std::size_t n = m_.size();
    const float* m = m_.data();
    const float* b = buffer_.data();
    const float* p = params.data();
    const float* d = delta.data();
    std::size_t bad = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : bad) if (n > (1 << 18))
    for (std::size_t i = 0; i < n; ++i) {  // step's arithmetic, nothing stored
        const float mi = momentum_step ? beta * m[i] + (b[i] + d[i]) / big_n : m[i];
        bad += !std::isfinite(p[i] - lr * (coeff * mi + d[i] / big_n));
    }
    return bad == 0;
}

std::size_t DelayedNesterov::state_size() const { return detail::state_size(2, m_.size()); }

void DelayedNesterov::write_state(const std::function<void(std::span<const std::byte>)>& put) const {
    const std::span<const float> arrays[] = {m_, buffer_};
    detail::write_state(detail::StateKind::delayed_nesterov, steps_, arrays, put);
}

void DelayedNesterov::load_state(std::span<const std::byte> bytes) {
    std::uint64_t steps = 0;
    auto a = detail::unpack_state(bytes, detail::StateKind::delayed_nesterov, m_.size(), 2, steps,
                                  "delayed nesterov");
    m_ = std::move(a[0]);
    buffer_ = std::move(a[1]);
    steps_ = steps;
}

}  // namespace arch::outer
