// peers/moment_sync.cpp: MomentPool, DES-LOC's moments in the host (moment_sync.h).
#include "peers/moment_sync.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

std::string moments_hash(std::span<const float> m, std::span<const float> v) {
    const std::string both = diloco::hash_floats(m) + diloco::hash_floats(v);
    return diloco::hash_bytes(std::as_bytes(std::span(both.data(), both.size())));
}

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
// What AdamW makes of any gradients (MomentPool's header), with room for fp32's rounding: a relative
// 1e-3, and 1e-12 absolute for values whose v underflowed to 0.
void check_adamw_made(const protocol::Moments& mv, double ratio, double clip) {
    constexpr double kRounding = 1e-3, kTiny = 1e-12;
    double m2 = 0, v1 = 0;
    for (std::size_t i = 0; i < mv.m.size(); ++i) {
        const double m = mv.m[i], v = mv.v[i];
        if (ratio > 0 && std::fabs(m) > ratio * std::sqrt(v) * (1 + kRounding) + kTiny) {
            char figures[160];
            std::snprintf(figures, sizeof(figures), "m = %.3g with v = %.3g at value %zu: AdamW keeps |m| within %.3f sqrt(v)",
                          m, v, i, ratio);
            throw Error(std::string("moments AdamW could not have made: ") + figures);
        }
        m2 += m * m;
        v1 += v;
    }
    if (clip > 0 && (std::sqrt(m2) > clip * (1 + kRounding) || v1 > clip * clip * (1 + kRounding))) {
        char figures[160];
        std::snprintf(figures, sizeof(figures), "|m| = %.3g and sum of v = %.3g, above %.3g and %.3g", std::sqrt(m2), v1,
                      clip, clip * clip);
        throw Error(std::string("moments beyond what gradients clipped to the run's grad_clip allow: ") + figures);
    }
}
}  // namespace

void MomentPool::accept(const std::string& key, std::span<const std::byte> blob, bool awaiting_delta,
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
    protocol::Moments mv = protocol::decode_moments(blob, params_);  // exact size, finite, v >= 0
    check_adamw_made(mv, ratio_, clip_);
    held_[key] = Held{mv.round, std::move(mv.m), std::move(mv.v)};
}

void MomentPool::drop(const std::string& key) { held_.erase(key); }

MomentPool::Mean MomentPool::take(std::span<const rounds::Contribution> used, uint64_t round) {
    Mean mean;
    std::vector<const rounds::Contribution*> with;
    double total = 0;
    for (const rounds::Contribution& c : used) {
        const auto it = held_.find(c.key);
        if (c.round != round || it == held_.end() || it->second.round != round) continue;
        with.push_back(&c);
        total += c.tokens;
    }
    std::sort(with.begin(), with.end(), [](auto* a, auto* b) { return a->island < b->island; });
    // Screen ‖m‖ and ‖v‖ against the round's (or recent rounds') median; the screens only read here.
    std::vector<std::span<float>> ms, vs;
    for (const rounds::Contribution* c : with) {
        Held& h = held_.at(c->key);
        ms.emplace_back(h.m);
        vs.emplace_back(h.v);
    }
    const std::vector<outer::ScreenVerdict> vm = screen_m_.screen(ms), vv = screen_v_.screen(vs);
    std::vector<const rounds::Contribution*> kept;
    total = 0;
    for (std::size_t i = 0; i < with.size(); ++i) {
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
    with = std::move(kept);
    if (!with.empty() && total > 0) {
        // The sum is built in the first island's buffers (0 + w x first, as from zeros), and each other
        // island's moments are let go of once added: beside the held moments no third set (2 P).
        for (std::size_t i = 0; i < with.size(); ++i) {  // in island order: the same sum on any host
            Held& h = held_.at(with[i]->key);
            const float w = static_cast<float>(with[i]->tokens / total);
            if (i == 0) {
                mean.m = std::move(h.m);
                mean.v = std::move(h.v);
                for (std::size_t k = 0; k < params_; ++k) {
                    mean.m[k] = 0.0f + w * mean.m[k];
                    mean.v[k] = 0.0f + w * mean.v[k];
                }
            } else {
                for (std::size_t k = 0; k < params_; ++k) {
                    mean.m[k] += w * h.m[k];
                    mean.v[k] += w * h.v[k];
                }
            }
            held_.erase(with[i]->key);
            mean.islands.push_back(with[i]->island);
        }
        mean.hash = moments_hash(mean.m, mean.v);
    }
    held_.clear();
    return mean;
}

}  // namespace arch
