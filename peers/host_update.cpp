// peers/host_update.cpp: the host's outer step (docs/protocol.md, "A sync round", step 4): screen the
// contributions the round policy hands over, aggregate and apply them, checkpoint, evaluate, and send
// every island the same update, naming the contributions it used and, in a DES-LOC round, carrying the
// mean of their AdamW moments (peers/moment_sync.h). The event loop around it is host.cpp's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/data_loader.h"
#include "core/error.h"
#include "core/trainer.h"
#include "peers/control/run_status.h"
#include "peers/host.h"

namespace arch {

using protocol::Type;

void Host::make_update(Link& link) {
    std::vector<rounds::Contribution> all = policy_->take_update();
    struct Recycle {  // every way out hands the Δ buffers back for the next round
        std::vector<rounds::Contribution>& all;
        std::vector<std::vector<float>>& spare;
        std::size_t most;
        ~Recycle() {
            for (rounds::Contribution& c : all)
                if (spare.size() < most && c.delta.capacity() > 0) spare.push_back(std::move(c.delta));
        }
    } recycle{all, spare_deltas_, static_cast<std::size_t>(std::max(options_.config.islands, 1))};
    auto again = [&](const std::string& why) {
        log("round " + std::to_string(round_) + why + "; starting it again");
        start_islands(link, policy_->after_update(view(link), false));
    };
    if (all.empty()) return again(" has no pseudo-gradients");
    if (privacy_) {
        if (!privatize(all))
            return again(": " + std::to_string(all.size()) + " pseudo-gradients cannot carry the whole noise, whose shares come "
                         "from privacy.honest = " + std::to_string(options_.config.privacy.honest) + " islands");
    } else {
        screen(all);
        if (all.empty()) return again(": every pseudo-gradient was rejected");
    }
    std::vector<outer::WeightedDelta> cs;
    std::vector<diloco::GlobalModel::HeldDelta> held;  // Δs held encoded (every one, or none)
    std::vector<protocol::Applied> applied;
    double loss = 0;
    for (const rounds::Contribution& c : all) {
        if (c.held) held.push_back({c.held.get(), c.tokens, c.scale});
        else cs.push_back({c.delta, privacy_ ? 1.0 : c.tokens});  // DP-FedAvg's mean counts every island the same
        applied.push_back({c.island, c.round});
        loss += c.loss / static_cast<double>(all.size());
    }
    std::vector<std::byte> update;
    const int fragment = round_fragment(options_.config, round_);
    double aggregate_s = 0, step_s = 0;
    // The aggregate lives in the memory of the last state of θ nobody holds any more, and goes back to
    // the pool once the update is encoded, to become the next state: beside θ and the momentum the
    // host holds the current state and this one buffer, not a scratch buffer as well.
    checkpoints_->before_step();  // the checkpoint's copy of the momentum is on disk before the step moves it
    std::vector<std::byte> room = shipping_.borrow();
    room.resize(global_->fragment(fragment).size * sizeof(float));
    const std::span<float> scratch(reinterpret_cast<float*>(room.data()), room.size() / sizeof(float));
    try {
        const Clock& real = Clock::real();  // the host's own work: real seconds
        Clock::time_point t = real.now();
        if (!held.empty() && !cs.empty()) throw Error("a round with both held and decoded pseudo-gradients");
        // An aggregator may refuse (trimmed, with too few).
        update = held.empty() ? global_->make_update(cs, fragment, scratch) : global_->make_update(held, fragment, scratch);
        shipping_.give_back(std::move(room));
        aggregate_s = real.seconds_since(t);
        t = real.now();
        global_->apply_update(update, fragment);      // θ must stay finite, or nothing changes
        step_s = real.seconds_since(t);
    } catch (const Error& e) {
        if (!room.empty()) shipping_.give_back(std::move(room));
        std::string who;
        for (const rounds::Contribution& c : all) who += (who.empty() ? "" : ", ") + c.name;
        return again(std::string(": ") + e.what() + " (contributions from " + who + ")");
    }
    const uint64_t ended = round_;
    ++round_;
    if (global_->fragments() > 1)
        log("round " + std::to_string(ended) + " updated fragment " + std::to_string(fragment) + " (" +
            std::to_string(all.size()) + " islands), fragment θ " + global_->fragment_hash(fragment).substr(0, 16));
    recent_theta_.emplace_back(round_, global_->hash());
    // The state of the old θ (P) lives on only while a queue still sends it (a joiner catches up with
    // the updates queued after it) or the checkpoint writer writes it; the next joiner gets a new one.
    shipping_.retire();
    while (recent_theta_.size() > kCatchUpUpdates + 1) recent_theta_.pop_front();
    sync_deadline_ = clock_.after(2 * options_.config.heartbeat_timeout_s);
    const Clock& real = Clock::real();
    Clock::time_point t = real.now();
    checkpoints_->updated();
    checkpoints_->pump([this] { return checkpoint_source(); });  // the snapshot, when one is due and the writer free: the write is the writer's
    const double checkpoint_s = real.seconds_since(t);
    t = real.now();
    const float val = evaluate();
    const double eval_s = real.seconds_since(t);
    const SharedBlob blob = encode_update(ended, all, std::move(applied), val, update);
    for (auto& [key, p] : roster_.peers())
        if (p.welcomed) send_update(link, key, ended, blob);
    char phases[256];
    std::snprintf(phases, sizeof(phases),
                  "round %llu host seconds: receive %.2f, decode %.2f, aggregate+encode %.2f, outer step %.2f, "
                  "checkpoint %.2f, eval %.2f",
                  static_cast<unsigned long long>(ended),
                  std::max(0.0, std::chrono::duration<double>(phases_.last_arrival - row_started_).count()),
                  phases_.decode_s, aggregate_s, step_s, checkpoint_s, eval_s);
    log(phases);
    phases_.decode_s = 0;
    phases_.update_sent = clock_.now();
    phases_.update_round = ended;
    finish_row(link, ended, all.size(), loss, val);
    start_islands(link, policy_->after_update(view(link), true));
}

SharedBlob Host::encode_update(uint64_t ended, const std::vector<rounds::Contribution>& all,
                               std::vector<protocol::Applied> applied, float val, std::span<const std::byte> update) {
    MomentPool::Mean moments;  // DES-LOC: the mean of the moments of the islands this update used
    if (moments_ && moments_round(options_.config, ended)) moments = moments_->take(all, ended);
    for (const std::string& why : moments.left_out)
        log("round " + std::to_string(ended) + " left the AdamW moments of " + why + " out of the mean");
    protocol::Writer w;
    protocol::UpdateMeta meta{ended, global_->hash(), static_cast<uint32_t>(all.size()), val, std::move(applied),
                              moments.islands};
    w.bytes(protocol::encode(meta));
    w.bytes(update);
    if (!moments.islands.empty()) {
        protocol::encode_moments(ended, moments.m, moments.v, w.bytes_in_place(protocol::moments_bytes(moments.m.size())));
        std::string which;
        for (const uint32_t i : moments.islands) which += (which.empty() ? "" : ", ") + std::to_string(i);
        log("round " + std::to_string(ended) + " averaged the AdamW moments of islands " + which +
            " (weighted by tokens), moments " + moments.hash.substr(0, 16));
    } else if (moments_ && moments_round(options_.config, ended)) {
        log("round " + std::to_string(ended) + " carries no moments: none came with the pseudo-gradients it used");
    }
    return std::make_shared<const std::vector<std::byte>>(w.take());
}

void Host::finish_row(Link& link, uint64_t ended, std::size_t islands, double loss, float val) {
    RoundRow row;
    row.round = ended;
    row.islands = static_cast<int>(islands);
    row.mean_inner_loss = static_cast<float>(loss);
    row.val_loss = val;
    row.bytes_up = uplink_bytes(link) - bytes_up_mark_;
    row.bytes_down = down_bytes_round_;  // update (and state) payloads queued for the islands this round
    down_bytes_round_ = 0;
    row.compression_ratio = row.bytes_up > 0 ? raw_bytes_round_ / static_cast<double>(row.bytes_up) : 0;
    row.seconds = clock_.seconds_since(row_started_);
    if (privacy_) row.epsilon = privacy_->spent(round_);
    bytes_up_mark_ = uplink_bytes(link);  // the next row counts from here
    raw_bytes_round_ = 0;
    row_started_ = clock_.now();
    if (options_.on_round) options_.on_round(row);
    if (options_.status) {
        options_.status->add_round(row);
        publish_run(link);
    }
}

void Host::screen(std::vector<rounds::Contribution>& all) {
    std::vector<outer::ScreenVerdict> verdicts;
    if (!all.empty() && all.front().held) {  // held encoded: judged on their norms, clipped as aggregated
        std::vector<double> norms;
        for (const rounds::Contribution& c : all) norms.push_back(c.norm);
        verdicts = screen_->judge(norms);
        for (std::size_t i = 0; i < all.size(); ++i) {
            const outer::ScreenVerdict& v = verdicts[i];
            if (v.outcome == outer::ScreenVerdict::Outcome::rejected) continue;
            all[i].scale = v.scale;
            screen_->remember(v.outcome == outer::ScreenVerdict::Outcome::clipped ? held_norm(*all[i].held, v.scale) : v.norm);
        }
    } else {
        std::vector<std::span<float>> deltas;
        for (rounds::Contribution& c : all) deltas.emplace_back(c.delta);
        verdicts = screen_->screen(deltas);
    }
    std::vector<rounds::Contribution> kept;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const outer::ScreenVerdict& v = verdicts[i];
        if (v.outcome != outer::ScreenVerdict::Outcome::kept) {
            char figures[96];
            std::snprintf(figures, sizeof(figures), "norm %.3g, above %.3g (%.3g x the median)", v.norm, v.limit,
                          options_.config.outer.screen_factor);
            log(std::string(v.outcome == outer::ScreenVerdict::Outcome::clipped ? "clipped" : "rejected") +
                " the pseudo-gradient of island " + std::to_string(all[i].island) + " (" + all[i].name + ") for round " +
                std::to_string(round_) + ": " + figures);
        }
        if (v.outcome != outer::ScreenVerdict::Outcome::rejected) kept.push_back(std::move(all[i]));
    }
    all = std::move(kept);
}

bool Host::privatize(std::vector<rounds::Contribution>& all) {
    const privacy::DpSettings& d = options_.config.privacy;
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
            log("clipped the pseudo-gradient of island " + std::to_string(c.island) + " (" + c.name + ") for round " +
                std::to_string(round_) + ": " + figures);
        }
    }
    if (noise_) privacy::add_central_noise(all.front().delta, d.clip, sigma, *noise_);
    return true;
}

float Host::evaluate() {
    if (val_pattern_.empty()) return -1.0f;
    const RunConfig& c = options_.config;
    eval_params_->view(global_->theta());
    DataLoader val(val_pattern_, c.batch, c.seq_len, DataOrder::sequential, 0);
    return mean_loss(*eval_model_, val, c.batch, c.seq_len, c.val_batches);
}

}  // namespace arch
