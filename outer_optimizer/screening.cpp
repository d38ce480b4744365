// outer_optimizer/screening.cpp: NormScreen.
#include "outer_optimizer/screening.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace arch::outer {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const EnumNames<ScreenPolicy::Action>& screen_action_names() {
    static const EnumNames<ScreenPolicy::Action> names{
        {"clip", ScreenPolicy::Action::clip}, {"reject", ScreenPolicy::Action::reject}, {"off", ScreenPolicy::Action::off}};
    return names;
}

ScreenPolicy::Action parse_screen_action(const std::string& name) { return parse_named(screen_action_names(), name, "screening"); }

namespace {
// Adds the squares of x (times scale) into the lanes, value k of x going to lane (at + k) % 8.
void add_squares(double (&lanes)[8], std::span<const float> x, float scale, std::uint64_t at) {
    const std::size_t n = x.size();
    std::size_t i = 0;
    const auto one = [&](std::size_t k) {
        const float y = x[k] * scale;
        lanes[(at + k) % 8] += static_cast<double>(y) * y;
    };
    for (; i < n && (at + i) % 8 != 0; ++i) one(i);  // up to the next lane 0
    double lane[8];
    std::copy(lanes, lanes + 8, lane);
    for (; i + 8 <= n; i += 8)
        for (std::size_t j = 0; j < 8; ++j) {
            const float y = x[i + j] * scale;
            lane[j] += static_cast<double>(y) * y;
        }
    std::copy(lane, lane + 8, lanes);
    for (; i < n; ++i) one(i);
}
}  // namespace

void SquareSum::add(std::span<const float> x, float scale) {
    while (!x.empty()) {
        const std::uint64_t in_run = at_ % kRun, take = std::min<std::uint64_t>(x.size(), kRun - in_run);
        add_squares(run_.lane, x.first(take), scale, in_run);
        x = x.subspan(take);
        at_ += take;
        if (at_ % kRun == 0) fold(std::exchange(run_, Lanes{}));
    }
}

SquareSum::Lanes SquareSum::of_run(std::span<const float> x, float scale) {
    if (x.size() > kRun) throw Error("SquareSum::of_run: more values than a run");
    Lanes run;
    add_squares(run.lane, x, scale, 0);
    return run;
}

void SquareSum::merge(const Lanes& run, std::uint64_t values) {
    if (at_ % kRun != 0 || values > kRun) throw Error("SquareSum::merge: not a run at a run's start");
    fold(run);
    at_ += values;
}

void SquareSum::fold(const Lanes& run) {
    for (std::size_t j = 0; j < 8; ++j) done_[j] += run.lane[j];
}

double SquareSum::total() const {
    double sum = 0;
    for (std::size_t j = 0; j < 8; ++j) sum += done_[j] + run_.lane[j];
    return sum;
}

double l2_norm(std::span<const float> x) {
    SquareSum sum;
    sum.add(x);
    return std::sqrt(sum.total());
}

NormScreen::NormScreen(ScreenPolicy policy, std::size_t history) : policy_(policy), capacity_(history) {
    if (!(policy.factor > 1.0)) throw Error("the screening factor must be above 1, got " + std::to_string(policy.factor));
}

std::vector<ScreenVerdict> NormScreen::judge(std::span<const double> norms, double ceiling) const {
    std::vector<ScreenVerdict> verdicts(norms.size());
    double reference = 0;
    if (norms.size() >= kMinForMedian) reference = median(std::vector<double>(norms.begin(), norms.end()));
    else if (history_.size() >= kMinForMedian) reference = median(std::vector<double>(history_.begin(), history_.end()));
    double limit = policy_.factor * reference;
    if (ceiling > 0 && (!(limit > 0) || ceiling < limit)) limit = ceiling;
    for (std::size_t i = 0; i < norms.size(); ++i) {
        ScreenVerdict& v = verdicts[i];
        v.norm = norms[i];
        v.limit = limit;
        if (policy_.action == ScreenPolicy::Action::off || !(limit > 0) || v.norm <= v.limit) continue;
        if (policy_.action == ScreenPolicy::Action::reject) {
            v.outcome = ScreenVerdict::Outcome::rejected;
        } else {
            v.outcome = ScreenVerdict::Outcome::clipped;
            v.scale = static_cast<float>(v.limit / v.norm);
        }
    }
    return verdicts;
}

void NormScreen::remember(double kept_norm) {
    history_.push_back(kept_norm);
    if (history_.size() > capacity_) history_.pop_front();
}

void NormScreen::restore(std::span<const double> norms) {
    history_.clear();
    for (double n : norms)
        if (std::isfinite(n) && n > 0) remember(n);
}

std::vector<ScreenVerdict> NormScreen::screen(std::span<const std::span<float>> deltas, double ceiling) {
    std::vector<double> norms;
    for (const std::span<float> d : deltas) norms.push_back(l2_norm(d));
    std::vector<ScreenVerdict> verdicts = judge(norms, ceiling);
    for (std::size_t i = 0; i < deltas.size(); ++i) {
        const ScreenVerdict& v = verdicts[i];
        if (v.outcome == ScreenVerdict::Outcome::rejected) continue;
        double kept_norm = v.norm;
        if (v.outcome == ScreenVerdict::Outcome::clipped) {
            for (float& x : deltas[i]) x *= v.scale;
            kept_norm = l2_norm(deltas[i]);
        }
        remember(kept_norm);
    }
    return verdicts;
}

// These three run over every value of a Δ or θ on the host's path to the update: written without a
// branch, so that they vectorize (a NaN is never beyond: it stays, and is not counted).
uint64_t clamp_values(std::span<float> x, float limit) {
    if (!(limit > 0)) return 0;
    uint64_t beyond = 0;
    float* v = x.data();
    const std::size_t n = x.size();
#pragma omp simd reduction(+ : beyond)
    for (std::size_t i = 0; i < n; ++i) {
        const bool out = std::fabs(v[i]) > limit;
        beyond += out;
        v[i] = out ? std::copysign(limit, v[i]) : v[i];
    }
    return beyond;
}

uint64_t count_beyond(std::span<const float> x, float limit) {
    if (!(limit > 0)) return 0;
    uint64_t beyond = 0;
    const float* v = x.data();
    const std::size_t n = x.size();
#pragma omp simd reduction(+ : beyond)
    for (std::size_t i = 0; i < n; ++i) beyond += std::fabs(v[i]) > limit;
    return beyond;
}

float largest_magnitude(std::span<const float> x) {
    float most = 0.0f;
    const float* v = x.data();
    const std::size_t n = x.size();
#pragma omp parallel for simd schedule(static) reduction(max : most) if (n > (1 << 18))
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(v[i]);
        most = a > most ? a : most;
    }
    return most;
}

}  // namespace arch::outer
