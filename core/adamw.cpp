// core/adamw.cpp: AdamW over decay/no-decay ranges of the flat buffer, clipping, and the LR schedule.
#include "core/adamw.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace arch {

std::vector<DecayRange> decay_ranges(const ParamLayout& layout) {
    std::vector<DecayRange> ranges;
    for (const TensorView& t : layout.tensors()) {
        if (!ranges.empty() && ranges.back().decay == t.weight_decay &&
            ranges.back().begin + ranges.back().size == t.offset) {
            ranges.back().size += t.size;
        } else {
            ranges.push_back({t.offset, t.size, t.weight_decay});
        }
    }
    return ranges;
}

AdamW::AdamW(const ParamLayout& layout, Backend& backend)
    : backend_(backend), n_(layout.num_params()), ranges_(decay_ranges(layout)) {
    m_ = static_cast<float*>(backend_.alloc(n_ * sizeof(float)));
    v_ = static_cast<float*>(backend_.alloc(n_ * sizeof(float)));
}

AdamW::~AdamW() {
    backend_.free(m_);
    backend_.free(v_);
}

float clip_scale(float norm, const AdamWConfig& c) {
    if (!std::isfinite(norm)) throw Error("AdamW: the gradient norm is " + std::to_string(norm) + "; refusing to update");
    if (c.grad_clip <= 0.0f) return 1.0f;
    const float coef = c.grad_clip / (norm + 1e-6f);
    return coef < 1.0f ? coef : 1.0f;
}

float AdamW::step(float* params, const float* grads, float lr, const AdamWConfig& c) {
    const float norm = static_cast<float>(std::sqrt(backend_.sum_squares(grads, n_)));
    const float scale = clip_scale(norm, c);
    ++steps_;
    for (const DecayRange& r : ranges_)
        backend_.adamw_update(params + r.begin, grads + r.begin, m_ + r.begin, v_ + r.begin, r.size, lr, c.beta1,
                              c.beta2, c.eps, r.decay ? c.weight_decay : 0.0f, scale, steps_);
    return norm;
}

void AdamW::get_state(std::span<float> m, std::span<float> v) const {
    if (m.size() != n_ || v.size() != n_) throw Error("AdamW::get_state: wrong buffer size");
    backend_.download(m.data(), m_, n_ * sizeof(float));
    backend_.download(v.data(), v_, n_ * sizeof(float));
}

void AdamW::set_state(std::span<const float> m, std::span<const float> v, int steps) {
    if (m.size() != n_ || v.size() != n_)
        throw Error("AdamW state holds " + std::to_string(m.size()) + " values, the model has " + std::to_string(n_));
    backend_.upload(m_, m.data(), n_ * sizeof(float));
    backend_.upload(v_, v.data(), n_ * sizeof(float));
    steps_ = steps;
}

void AdamW::get_state_slice(StateVector which, std::size_t offset, std::span<float> out) const {
    if (which == StateVector::params) throw Error("AdamW::get_state_slice: AdamW holds m and v, not the parameters");
    if (offset > n_ || out.size() > n_ - offset) throw Error("AdamW::get_state_slice: the slice runs past the state");
    backend_.download(out.data(), (which == StateVector::m ? m_ : v_) + offset, out.size_bytes());
}

void AdamW::set_state_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
    if (m.size() != v.size() || offset > n_ || m.size() > n_ - offset)
        throw Error("AdamW::set_state_slice: the slice runs past the state");
    backend_.upload(m_ + offset, m.data(), m.size_bytes());
    backend_.upload(v_ + offset, v.data(), v.size_bytes());
}

float LrSchedule::at(int step) const {
    if (step < warmup_steps) return max_lr * static_cast<float>(step + 1) / static_cast<float>(warmup_steps);
    if (kind == Kind::constant) return max_lr;
    const float min_lr = max_lr * final_fraction;
    const int span = total_steps - warmup_steps;
    if (span <= 0 || step >= total_steps) return min_lr;
    const float ratio = static_cast<float>(step - warmup_steps) / static_cast<float>(span);
    const float coeff = 0.5f * (1.0f + std::cos(3.14159265358979f * ratio));
    return min_lr + coeff * (max_lr - min_lr);
}

}  // namespace arch
