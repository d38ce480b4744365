// peers/host_deltas.cpp: HostDeltas.
#include "peers/host_deltas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "core/error.h"
#include "core/muon.h"
#include "core/param_layout.h"

namespace arch {

namespace {
// Error feedback whose residual can carry a value over many rounds: top-k sends a value only once it
// is among the largest, and sign sends each block's mean magnitude. One round's bound does not hold
// for what such a codec sends (the quantizing codecs' residual is one rounding error, which the
// bound's factor 2 covers).
bool carries_rounds(const std::string& codec) {
    const compression::CodecSpec spec = compression::parse_codec_spec(codec);
    return spec.error_feedback && (spec.codec == compression::CodecId::topk || spec.codec == compression::CodecId::sign);
}
}  // namespace

HostDeltas::HostDeltas(const RunConfig& config, const ModelConfig& model, const diloco::GlobalModel& global,
                       const privacy::PrivacyBudget* privacy, std::function<void(const std::string&)> log,
                       std::function<void(const RunEvent&)> event)
    : config_(config),
      global_(global),
      privacy_(privacy),
      log_(std::move(log)),
      event_(std::move(event)),
      screen_(outer::ScreenPolicy{config.outer.screen, config.outer.screen_factor}),
      step_rms_(inner_step_rms_bound(run_train_config(config, "", "", 0))),
      step_value_(carries_rounds(config.codec)
                      ? 0
                      : inner_step_value_bound(run_train_config(config, "", "", 0), muon_widest_side(ParamLayout(model)))) {
    if (privacy_ && !config.privacy.distributed()) noise_ = std::make_unique<privacy::NoiseSource>();
}

void HostDeltas::take_in(std::span<const std::byte> payload, std::size_t values, rounds::Contribution& c) {
    if (holds_encoded()) {
        std::vector<std::byte> memory;  // a payload's from an earlier round: no fresh pages to clear
        if (!spare_payloads_.empty()) {
            memory = std::move(spare_payloads_.back());
            spare_payloads_.pop_back();
        }
        c.held = std::make_shared<compression::HeldPayload>(payload, values, compression::HeldPayload::Keep::copy,
                                                            std::move(memory));  // validated whole
        c.limit = value_limit();  // its norm and clamp come with the aggregation pass (judge_held)
        return;
    }
    if (!spare_.empty()) {
        c.delta = std::move(spare_.back());
        spare_.pop_back();
    }
    c.delta.resize(values);
    compression::decode(payload, c.delta, decode_scratch_);
}

std::string HostDeltas::vet(std::vector<rounds::Contribution>& all, uint64_t round) {
    if (privacy_) {
        if (!privatize(all, round))
            return ": " + std::to_string(all.size()) + " pseudo-gradients cannot carry the whole noise, whose shares come "
                   "from privacy.honest = " + std::to_string(config_.privacy.honest) + " islands";
        return "";
    }
    if (!all.empty() && all.front().held) return "";  // judge_held, after the aggregation pass
    screen(all, round);
    return all.empty() ? ": every pseudo-gradient was rejected" : "";
}

void HostDeltas::recycle(std::vector<rounds::Contribution>& all) {
    const std::size_t most = static_cast<std::size_t>(std::max(config_.islands, 1));
    for (rounds::Contribution& c : all) {
        if (spare_.size() < most && c.delta.capacity() > 0) spare_.push_back(std::move(c.delta));
        if (spare_payloads_.size() < most && c.held && c.held.use_count() == 1)
            spare_payloads_.push_back(c.held->release_buffer());
    }
}

bool HostDeltas::holds_encoded() const {
    // Sync rounds (overlapped ones too: their host is sync's), where no policy rescales a Δ, with an
    // aggregator that works coordinate by coordinate; differential privacy clips and noises whole Δs,
    // so it decodes them.
    const bool sync = config_.mode == RunMode::sync || config_.mode == RunMode::overlap;
    return sync && !privacy_ && global_.aggregates_per_coordinate();
}

double HostDeltas::held_norm(const compression::HeldPayload& held, float scale) {
    // As outer::l2_norm gives it for the Δ decoded whole and multiplied by scale: the same sum, a
    // slice at a time.
    const uint64_t n = held.count(), slice = compression::slice_length(held.alignment());
    outer::SquareSum sum;
    for (uint64_t first = 0; first < n; first += slice) {
        const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(slice, n - first));
        if (norm_slice_.size() < len) norm_slice_.resize(len);
        const std::span<float> values = std::span(norm_slice_).first(len);
        held.decode(first, values);
        sum.add(values, scale);
    }
    return std::sqrt(sum.total());
}

float HostDeltas::value_limit() {
    if (step_value_ <= 0 || privacy_ || config_.outer.screen == outer::ScreenPolicy::Action::off) return 0.0f;
    if (limit_at_ != global_.updates_applied()) {
        limit_at_ = global_.updates_applied();
        const float largest = outer::largest_magnitude(global_.theta());
        const double H = config_.steps_per_round, lr = config_.lr, move = H * lr * step_value_;
        limit_ = static_cast<float>(2.0 * (move + H * lr * config_.weight_decay * (largest + move)));
    }
    return limit_;
}

double HostDeltas::honest_ceiling(std::size_t values, double longest) const {
    if (step_rms_ <= 0) return 0;
    const double H = config_.steps_per_round, lr = config_.lr;
    const double move = H * lr * step_rms_ * std::sqrt(static_cast<double>(values));  // the steps themselves
    if (longest <= 2.0 * move) return 2.0 * move;  // every Δ is within it, whatever weight decay adds
    const double decay = H * lr * config_.weight_decay * (outer::l2_norm(global_.theta()) + move);  // wd × |θ| a step
    return 2.0 * (move + decay);
}

void HostDeltas::screen(std::vector<rounds::Contribution>& all, uint64_t round) {
    if (all.empty()) return;
    std::vector<std::span<float>> deltas;
    for (rounds::Contribution& c : all) deltas.emplace_back(c.delta);
    // Their norms are the screen's to take: the ceiling is taken whole (a pass over θ).
    const std::vector<outer::ScreenVerdict> verdicts =
        screen_.screen(deltas, honest_ceiling(all.front().delta.size(), std::numeric_limits<double>::infinity()));
    const float limit = value_limit();
    for (std::size_t i = 0; i < all.size(); ++i)
        if (verdicts[i].outcome != outer::ScreenVerdict::Outcome::rejected)
            all[i].beyond = outer::clamp_values(all[i].delta, limit), all[i].limit = limit;
    keep_judged(all, verdicts, round);
}

bool HostDeltas::judge_held(std::vector<rounds::Contribution>& all, std::span<const diloco::GlobalModel::Seen> seen,
                            uint64_t round) {
    if (seen.size() != all.size()) throw Error("judge_held: one Seen per held Δ");
    if (all.empty()) return false;
    std::vector<double> norms;
    for (std::size_t i = 0; i < all.size(); ++i) {
        all[i].norm = std::sqrt(seen[i].squares.total());
        all[i].beyond = seen[i].beyond;
        norms.push_back(all[i].norm);
    }
    const double ceiling = honest_ceiling(all.front().held->count(), *std::max_element(norms.begin(), norms.end()));
    const std::vector<outer::ScreenVerdict> verdicts = screen_.judge(norms, ceiling);
    bool changed = false;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const outer::ScreenVerdict& v = verdicts[i];
        changed = changed || v.outcome != outer::ScreenVerdict::Outcome::kept;
        if (v.outcome == outer::ScreenVerdict::Outcome::rejected) continue;
        all[i].scale = v.scale;
        screen_.remember(v.outcome == outer::ScreenVerdict::Outcome::clipped ? held_norm(*all[i].held, v.scale) : v.norm);
    }
    keep_judged(all, verdicts, round);
    return changed;
}

void HostDeltas::keep_judged(std::vector<rounds::Contribution>& all, std::span<const outer::ScreenVerdict> verdicts,
                             uint64_t round) {
    std::vector<rounds::Contribution> kept;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const outer::ScreenVerdict& v = verdicts[i];
        if (v.outcome != outer::ScreenVerdict::Outcome::kept) {
            char figures[96];
            std::snprintf(figures, sizeof(figures), "norm %.3g, above %.3g (%.3g x the median)", v.norm, v.limit,
                          config_.outer.screen_factor);
            log_(std::string(v.outcome == outer::ScreenVerdict::Outcome::clipped ? "clipped" : "rejected") +
                " the pseudo-gradient of island " + std::to_string(all[i].island) + " (" + all[i].name + ") for round " +
                std::to_string(round) + ": " + figures);
            event_({.kind = "screened", .round = static_cast<int64_t>(round), .island = static_cast<int>(all[i].island),
                    .peer = all[i].name, .type = v.outcome == outer::ScreenVerdict::Outcome::clipped ? "clipped" : "rejected"});
        }
        if (v.outcome == outer::ScreenVerdict::Outcome::rejected) continue;
        if (all[i].beyond > 0) {
            char figures[128];
            std::snprintf(figures, sizeof(figures), "%llu values beyond ±%.3g, the most one value moves in a round",
                          static_cast<unsigned long long>(all[i].beyond), all[i].limit);
            log_("clamped the pseudo-gradient of island " + std::to_string(all[i].island) + " (" + all[i].name +
                 ") for round " + std::to_string(round) + ": " + figures);
            event_({.kind = "screened", .round = static_cast<int64_t>(round), .island = static_cast<int>(all[i].island),
                    .peer = all[i].name, .type = "clamped"});
        }
        kept.push_back(std::move(all[i]));
    }
    all = std::move(kept);
}

bool HostDeltas::privatize(std::vector<rounds::Contribution>& all, uint64_t round) {
    const privacy::DpSettings& d = config_.privacy;
    const double sigma = privacy_->noise_multiplier();
    if (d.distributed() && all.size() < static_cast<std::size_t>(d.honest)) return false;
    // Central: the bound is the clip. Distributed: each Δ arrives clipped and noised, so the bound is
    // the clip plus its share's norm, N(0, s^2) over d coordinates: s (sqrt(d) + 8) lies more than ten
    // standard deviations of that norm above its mean. An island that sent more is cut to it.
    const double share = sigma * d.clip / std::sqrt(static_cast<double>(std::max(d.honest, 1)));
    for (rounds::Contribution& c : all) {
        const double bound = d.distributed() ? d.clip + share * (std::sqrt(static_cast<double>(c.delta.size())) + 8) : d.clip;
        const double norm = privacy::clip_l2(c.delta, bound);
        if (d.distributed() && norm > bound) {
            char figures[96];
            std::snprintf(figures, sizeof(figures), "norm %.4g, above %.4g (the clip and its noise share)", norm, bound);
            log_("clipped the pseudo-gradient of island " + std::to_string(c.island) + " (" + c.name + ") for round " +
                std::to_string(round) + ": " + figures);
            event_({.kind = "screened", .round = static_cast<int64_t>(round), .island = static_cast<int>(c.island), .peer = c.name,
                    .type = "privacy_clipped"});
        }
    }
    if (noise_) privacy::add_central_noise(all.front().delta, d.clip, sigma, *noise_);
    return true;
}

}  // namespace arch
