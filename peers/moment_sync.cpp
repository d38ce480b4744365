// peers/moment_sync.cpp: MomentPool, DES-LOC's moments in the host (moment_sync.h).
#include "peers/moment_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/bf16.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/inner_loop.h"
#include "peers/diloco/global_model.h"
#include "peers/protocol.h"
#include "peers/run_config.h"

namespace arch {

bool moments_round(int every, uint64_t round) {
    return every > 0 && (round + 1) % static_cast<uint64_t>(every) == 0;
}

bool moments_round(const RunConfig& c, uint64_t round) { return moments_round(c.sync_moments_every, round); }

namespace {
std::string combined_hash(const std::string& m_sum, const std::string& v_sum) {
    const std::string both = m_sum + v_sum;
    return diloco::hash_bytes(std::as_bytes(std::span(both.data(), both.size())));
}
}  // namespace

std::string moments_hash(std::span<const float> m, std::span<const float> v) {
    return combined_hash(diloco::hash_floats(m), diloco::hash_floats(v));
}

void MomentsHash::add(StateVector which, std::span<const float> values) {
    if (which == StateVector::params) throw Error("MomentsHash: a slice of the parameters, not of m or v");
    (which == StateVector::m ? m_ : v_).add(std::as_bytes(values));
}

std::string MomentsHash::hex() const { return combined_hash(m_.hex(), v_.hex()); }

namespace {
// outer.screen = off turns this screen off too; clip or reject: moments far above are left out.
outer::ScreenPolicy moments_screen(const RunConfig& c) {
    const bool off = c.outer.screen == outer::ScreenPolicy::Action::off;
    return {off ? outer::ScreenPolicy::Action::off : outer::ScreenPolicy::Action::reject, c.outer.screen_factor};
}
}  // namespace

MomentPool::MomentPool(const RunConfig& config, std::size_t params)
    : every_(config.sync_moments_every),
      screen_m_(moments_screen(config)),
      screen_v_(moments_screen(config)),
      params_(params) {
    const TrainConfig train = run_train_config(config, "", "", 0);
    const bool adamw = train.optimizer == InnerOptimizer::adamw;
    ratio_ = adamw ? adamw_moment_ratio_bound(train.adamw) : 0;
    clip_ = adamw && train.adamw.grad_clip > 0 ? train.adamw.grad_clip : 0;
}

namespace {
// What AdamW makes of any gradients (MomentPool's header), with room for the moments' rounding to bf16
// (2^-8 on each: |m| may read 0.6% above its bound) and fp32's: a relative 1e-2, and 1e-12 absolute
// for values whose v underflowed to 0. Returns ‖m‖ and ‖v‖, for the screens.
std::pair<double, double> check_adamw_made(const protocol::MomentsView& mv, double ratio, double clip) {
    constexpr double kRounding = 1e-2, kTiny = 1e-12;
    // On the host's threads, a run of values each: the sums of each run in its own slot, added in
    // order after, so the norms have the same bits on any number of threads; the first value out of
    // bounds is the lowest any run found.
    constexpr std::size_t kRun = std::size_t{1} << 16;
    const std::size_t runs = (mv.count + kRun - 1) / kRun;
    std::vector<double> sums(3 * runs);
    std::size_t first_bad = mv.count;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (runs > 1)
    for (std::size_t r = 0; r < runs; ++r) {
        double m2 = 0, v1 = 0, v2 = 0;
        const std::size_t end = std::min(mv.count, (r + 1) * kRun);
        for (std::size_t i = r * kRun; i < end; ++i) {
            const double m = mv.m_at(i), v = mv.v_at(i);
            if (ratio > 0 && std::fabs(m) > ratio * std::sqrt(v) * (1 + kRounding) + kTiny) {
                first_bad = std::min(first_bad, i);
                break;
            }
            m2 += m * m;
            v1 += v;
            v2 += v * v;
        }
        sums[3 * r] = m2;
        sums[3 * r + 1] = v1;
        sums[3 * r + 2] = v2;
    }
    if (first_bad < mv.count) {
        const double m = mv.m_at(first_bad), v = mv.v_at(first_bad);
        char figures[160];
        std::snprintf(figures, sizeof(figures), "m = %.3g with v = %.3g at value %zu: AdamW keeps |m| within %.3f sqrt(v)",
                      m, v, first_bad, ratio);
        throw Error(std::string("moments AdamW could not have made: ") + figures);
    }
    double m2 = 0, v1 = 0, v2 = 0;
    for (std::size_t r = 0; r < runs; ++r) {
        m2 += sums[3 * r];
        v1 += sums[3 * r + 1];
        v2 += sums[3 * r + 2];
    }
    if (clip > 0 && (std::sqrt(m2) > clip * (1 + kRounding) || v1 > clip * clip * (1 + kRounding))) {
        char figures[160];
        std::snprintf(figures, sizeof(figures), "|m| = %.3g and sum of v = %.3g, above %.3g and %.3g", std::sqrt(m2), v1,
                      clip, clip * clip);
        throw Error(std::string("moments beyond what gradients clipped to the run's grad_clip allow: ") + figures);
    }
    return {std::sqrt(m2), std::sqrt(v2)};
}
}  // namespace

void MomentPool::accept(const std::string& key, std::vector<std::byte> blob, bool awaiting_delta,
                        uint64_t started_round, uint64_t round) {
    // Role and round before anything is decoded.
    const uint64_t of = protocol::moments_round(blob);
    if (!moments_round(every_, of))
        throw Error("moments for round " + std::to_string(of) + ", which carries none (outer.sync_moments_every = " +
                    std::to_string(every_) + ")");
    if (of != started_round || of != round)
        throw Error("moments for round " + std::to_string(of) + ", but this island was started on round " +
                    std::to_string(started_round) + " and the round in progress is " + std::to_string(round));
    if (!awaiting_delta)
        throw Error("moments for round " + std::to_string(of) + " after its pseudo-gradient (they come before it)");
    if (const auto it = held_.find(key); it != held_.end() && it->second.round == of)
        throw Error("a second set of moments for round " + std::to_string(of));
    const protocol::MomentsView mv = protocol::check_moments(blob, params_);  // exact size, finite, v >= 0
    const auto [m_norm, v_norm] = check_adamw_made(mv, ratio_, clip_);
    held_[key] = Held{of, std::move(blob), m_norm, v_norm};  // as it came: no copy, no fresh pages
}

void MomentPool::drop(const std::string& key) { held_.erase(key); }

MomentPool::Mean MomentPool::choose(std::span<const rounds::Contribution> used, uint64_t round) {
    Mean mean;
    std::vector<const rounds::Contribution*> with;
    for (const rounds::Contribution& c : used) {
        const auto it = held_.find(c.key);
        if (c.round != round || it == held_.end() || it->second.round != round) continue;
        with.push_back(&c);
    }
    std::sort(with.begin(), with.end(), [](auto* a, auto* b) { return a->island < b->island; });
    // Screen ‖m‖ and ‖v‖ against the round's (or recent rounds') median, as NormScreen::screen would.
    std::vector<double> m_norms, v_norms;
    for (const rounds::Contribution* c : with) {
        m_norms.push_back(held_.at(c->key).m_norm);
        v_norms.push_back(held_.at(c->key).v_norm);
    }
    const std::vector<outer::ScreenVerdict> vm = screen_m_.judge(m_norms), vv = screen_v_.judge(v_norms);
    std::vector<const rounds::Contribution*> kept;
    double total = 0;
    for (std::size_t i = 0; i < with.size(); ++i) {
        if (vm[i].outcome != outer::ScreenVerdict::Outcome::rejected) screen_m_.remember(vm[i].norm);
        if (vv[i].outcome != outer::ScreenVerdict::Outcome::rejected) screen_v_.remember(vv[i].norm);
        const outer::ScreenVerdict* bad = vm[i].outcome != outer::ScreenVerdict::Outcome::kept   ? &vm[i]
                                          : vv[i].outcome != outer::ScreenVerdict::Outcome::kept ? &vv[i]
                                                                                                 : nullptr;
        if (bad == nullptr) {
            kept.push_back(with[i]);
            total += with[i]->tokens;
            continue;
        }
        char why[128];
        std::snprintf(why, sizeof(why), "island %u: |%s| %.3g above %.3g", with[i]->island, bad == &vm[i] ? "m" : "v",
                      bad->norm, bad->limit);
        mean.left_out.push_back(why);
    }
    if (total > 0)
        for (const rounds::Contribution* c : kept) {
            mean.islands.push_back(c->island);
            mean.weights.emplace_back(c->key, static_cast<float>(c->tokens / total));
        }
    if (mean.islands.empty()) held_.clear();
    return mean;
}

void MomentPool::write(Mean& mean, uint64_t round, std::span<std::byte> out) {
    if (out.size() != protocol::moments_bytes(params_))
        throw Error("moments: " + std::to_string(out.size()) + " bytes to write the mean of " + std::to_string(params_) +
                    " values into");
    std::vector<const std::byte*> from;
    std::vector<float> w;
    for (const auto& [key, weight] : mean.weights) {
        from.push_back(held_.at(key).blob.data() + 16);  // m, then v
        w.push_back(weight);
    }
    store_le(out.data(), round);
    store_le(out.data() + 8, static_cast<uint64_t>(params_));
    // m's section, then v's: each value the sum 0 + w x over the islands in order, as from zeros, in
    // fp32, rounded to bf16 once; the hash reads the rounded values back a slice at a time.
    constexpr std::size_t kSlice = std::size_t{1} << 20;
    std::vector<float> slice(std::min(kSlice, params_));
    std::string sums[2];
    const std::ptrdiff_t islands = static_cast<std::ptrdiff_t>(from.size());
    for (int part = 0; part < 2; ++part) {
        const std::size_t at = static_cast<std::size_t>(part) * 2 * params_;  // m, then v
        std::byte* to = out.data() + 16 + at;
        diloco::Checksum sum;
        for (std::size_t first = 0; first < params_; first += kSlice) {
            const std::ptrdiff_t len = static_cast<std::ptrdiff_t>(std::min(kSlice, params_ - first));
#pragma omp parallel for schedule(static) if (len > (1 << 16))
            for (std::ptrdiff_t k = 0; k < len; ++k) {
                float s = 0.0f;
                for (std::ptrdiff_t i = 0; i < islands; ++i)
                    s += w[i] * bf16_to_float(load_le<uint16_t>(from[i] + at + 2 * (first + k)));
                const uint16_t b = float_to_bf16(s);
                store_le(to + 2 * (first + k), b);
                slice[k] = bf16_to_float(b);
            }
            sum.add(std::as_bytes(std::span(slice).first(static_cast<std::size_t>(len))));
        }
        sums[part] = sum.hex();
    }
    mean.hash = combined_hash(sums[0], sums[1]);
    held_.clear();
}

}  // namespace arch
