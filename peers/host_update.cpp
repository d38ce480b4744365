// peers/host_update.cpp: the host's outer step (docs/protocol.md, "A sync round", step 4): screen the
// contributions the round policy hands over, aggregate and apply them, checkpoint, send every island
// the same update, naming the contributions it used and, in a DES-LOC round, carrying the mean of
// their AdamW moments (peers/moment_sync.h), and start the new θ's evaluation beside the rounds: the
// round's row goes out when its val loss is in. The event loop around it is host.cpp's.
#include <cstdio>
#include <utility>

#include "core/error.h"
#include "peers/control/run_status.h"
#include "peers/host.h"

namespace arch {

namespace {
// A contribution held encoded, as the aggregation pass takes it: its payload, weight, clip and bound.
diloco::GlobalModel::HeldDelta held_delta(const rounds::Contribution& c) { return {c.held.get(), c.tokens, c.scale, c.limit}; }
}  // namespace

void Host::make_update(Link& link) {
    std::vector<rounds::Contribution> all = policy_->take_update();
    struct Recycle {  // every way out hands the Δ buffers back for the next round
        HostDeltas& deltas;
        std::vector<rounds::Contribution>& all;
        ~Recycle() { deltas.recycle(all); }
    } recycle{*deltas_, all};
    auto again = [&](const std::string& why) {
        log("round " + std::to_string(round_) + why + "; starting it again");
        emit({.kind = "round_restarted", .round = static_cast<int64_t>(round_), .detail = why});
        start_islands(link, policy_->after_update(view(link), false));
    };
    if (all.empty()) return again(" has no pseudo-gradients");
    if (const std::string why = deltas_->vet(all, round_); !why.empty()) return again(why);
    const int fragment = round_fragment(options_.config, round_);
    UpdateSeconds seconds;
    std::vector<std::byte> update;
    try {
        update = step(all, fragment, seconds);
    } catch (const Error& e) {
        std::string who;
        for (const rounds::Contribution& c : all) who += (who.empty() ? "" : ", ") + c.name;
        return again(std::string(": ") + e.what() + (who.empty() ? "" : " (contributions from " + who + ")"));
    }
    const uint64_t ended = round_++;
    if (global_->fragments() > 1)
        log("round " + std::to_string(ended) + " updated fragment " + std::to_string(fragment) + " (" +
            std::to_string(all.size()) + " islands), fragment θ " + global_->fragment_hash(fragment).substr(0, 16));
    ledger_.theta(round_, global_->hash());
    // The state of the old θ (P) lives on only while a queue still sends it (a joiner catches up with
    // the updates queued after it); the next joiner gets a new one.
    shipping_.retire();
    sync_deadline_ = clock_.after(2 * options_.config.heartbeat_timeout_s);
    const Clock& real = Clock::real();  // the host's own work: real seconds
    Clock::time_point t = real.now();
    checkpoints_->updated();
    checkpoints_->pump();  // the snapshot, when one is due and the writer free: the write is the writer's
    seconds.checkpoint = real.seconds_since(t);
    std::vector<protocol::Applied> applied;
    double loss = 0;
    for (const rounds::Contribution& c : all) {
        applied.push_back({c.island, c.round});
        loss += c.loss / static_cast<double>(all.size());
    }
    const SharedBlob blob = encode_update(ended, all, std::move(applied), last_val_, std::move(update));
    for (auto& [key, p] : roster_.peers())
        if (p.welcomed) send_update(link, key, ended, blob);
    t = real.now();
    // The run's last θ is evaluated whatever the one under way: the run ends with its val loss.
    if (round_ >= last_update()) {
        eval_->wait();
        take_eval(link);
    }
    const bool evaluating = eval_->start(ended, global_->theta_snapshot());
    seconds.eval = real.seconds_since(t);
    log(ledger_.update_sent(ended, seconds));
    FinishedRound finished = close_row(link, ended, all.size(), loss);
    publish_waiting_row(link);  // its evaluation never started, or this update came first: out without a val loss
    if (evaluating) waiting_row_ = std::move(finished);
    else publish_row(link, std::move(finished));
    start_islands(link, policy_->after_update(view(link), true));
}

std::vector<std::byte> Host::step(std::vector<rounds::Contribution>& all, int fragment, UpdateSeconds& seconds) {
    std::vector<outer::WeightedDelta> cs;
    std::vector<diloco::GlobalModel::HeldDelta> held;  // Δs held encoded (every one, or none)
    for (const rounds::Contribution& c : all) {
        if (c.held) held.push_back(held_delta(c));
        else cs.push_back({c.delta, deltas_->weight(c)});
    }
    if (!held.empty() && !cs.empty()) throw Error("a round with both held and decoded pseudo-gradients");
    checkpoints_->before_step();  // the checkpoint's copy of the momentum is on disk before the step moves it
    aggregate_.resize(global_->fragment(fragment).size);  // kept from round to round: made and cleared once
    const std::span<float> scratch(aggregate_);
    const Clock& real = Clock::real();
    Clock::time_point t = real.now();
    // an aggregator may refuse (trimmed, with too few): it throws
    std::vector<std::byte> update =
        held.empty() ? global_->make_update(cs, fragment, scratch) : aggregate_held(all, held, fragment, scratch);
    seconds.aggregate = real.seconds_since(t);
    t = real.now();
    const uint64_t copies = global_->theta_copies();
    global_->apply_update(update, fragment);  // θ must stay finite, or nothing changes
    seconds.step = real.seconds_since(t);
    if (global_->theta_copies() > copies)
        log("round " + std::to_string(round_) + " changed θ while the checkpoint writer or the evaluation still read an "
            "earlier one: θ was copied (copy on write), and their copy is freed when they are done");
    return update;
}

std::vector<std::byte> Host::aggregate_held(std::vector<rounds::Contribution>& all,
                                            std::vector<diloco::GlobalModel::HeldDelta>& held, int fragment,
                                            std::span<float> scratch) {
    // One pass decodes each Δ a slice at a time, aggregates them as they came and takes their norms for
    // the screen; only when it clips or rejects one is the aggregate taken again, without it or scaled.
    std::vector<diloco::GlobalModel::Seen> seen(held.size());
    global_->aggregate_held(held, fragment, scratch, seen);
    if (deltas_->judge_held(all, seen, round_)) {
        if (all.empty()) throw Error("every pseudo-gradient was rejected");
        held.clear();
        for (const rounds::Contribution& c : all) held.push_back(held_delta(c));
        global_->aggregate_held(held, fragment, scratch);
    }
    return global_->step_and_encode(fragment, scratch.first(global_->fragment(fragment).size));
}

SharedBlob Host::encode_update(uint64_t ended, const std::vector<rounds::Contribution>& all,
                               std::vector<protocol::Applied> applied, float val, std::vector<std::byte> update) {
    MomentPool::Mean moments;  // DES-LOC: the mean of the moments of the islands this update used
    if (moments_ && moments_round(options_.config, ended)) moments = moments_->choose(all, ended);
    for (const std::string& why : moments.left_out)
        log("round " + std::to_string(ended) + " left the AdamW moments of " + why + " out of the mean");
    ByteWriter w;
    protocol::UpdateMeta meta{ended, global_->hash(), static_cast<uint32_t>(all.size()), val, std::move(applied),
                              moments.islands};
    w.bytes(protocol::encode(meta));
    if (moments.islands.empty()) {
        // The meta goes in front of the update in the update's own memory, which the codec leaves room
        // in: the update is not copied into fresh pages every round.
        std::vector<std::byte> blob = w.take_before(std::move(update));
        if (moments_ && moments_round(options_.config, ended))
            log("round " + std::to_string(ended) + " carries no moments: none came with the pseudo-gradients it used");
        return share_blob(std::move(blob), global_->update_recycler());
    }
    w.bytes(update);
    if (const auto recycle = global_->update_recycler()) recycle(std::move(update));  // copied: its memory is free
    moments_->write(moments, ended, w.bytes_in_place(protocol::moments_bytes(global_->theta().size())));
    std::string which;
    for (const uint32_t i : moments.islands) which += (which.empty() ? "" : ", ") + std::to_string(i);
    log("round " + std::to_string(ended) + " averaged the AdamW moments of islands " + which +
        " (weighted by tokens), moments " + moments.hash.substr(0, 16));
    emit({.kind = "moments_averaged", .round = static_cast<int64_t>(ended), .islands = static_cast<int>(moments.islands.size()),
          .hash = moments.hash.substr(0, 16), .detail = which});
    return share_blob(w.take());
}

Host::FinishedRound Host::close_row(Link& link, uint64_t ended, std::size_t islands, double loss) {
    FinishedRound f{ledger_.close(ended, islands, loss, -1.0f, uplink_bytes(link)), global_->hash().substr(0, 12),
                    global_->fragments() > 1 ? round_fragment(options_.config, ended) : -1};
    if (privacy_) f.row.epsilon = privacy_->spent(round_);
    const rounds::ChosenSteps steps = policy_->round_steps();
    f.row.steps = steps.steps;
    f.row.steps_why = steps.why;
    return f;
}

void Host::publish_row(Link& link, FinishedRound f) {
    if (options_.on_round) options_.on_round(f.row);
    emit({.kind = "round_finished", .round = static_cast<int64_t>(f.row.round), .islands = f.row.islands,
          .theta = f.theta, .val_loss = f.row.val_loss, .fragment = f.fragment});
    if (options_.status) {
        options_.status->add_round(f.row);
        publish_run(link);
    }
}

void Host::publish_waiting_row(Link& link) {
    if (waiting_row_) publish_row(link, *std::exchange(waiting_row_, std::nullopt));
}

void Host::take_eval(Link& link) {
    const std::optional<GlobalEval::Result> r = eval_->take_result();
    if (!r) return;
    const std::string which =
        r->round == GlobalEval::kStart ? "the starting θ" : "θ after round " + std::to_string(r->round);
    if (r->error.empty()) {
        last_val_ = r->loss;
        char line[200];
        std::snprintf(line, sizeof(line), "val loss %.6f of %s (evaluated in %.2f s beside the rounds)", r->loss,
                      which.c_str(), r->seconds);
        log(line);
    } else {
        log("the evaluation of " + which + " failed: " + r->error);
    }
    emit({.kind = "evaluated", .round = r->round == GlobalEval::kStart ? -1 : static_cast<int64_t>(r->round),
          .val_loss = r->error.empty() ? r->loss : -1.0, .detail = r->error});
    if (waiting_row_ && waiting_row_->row.round == r->round) {
        waiting_row_->row.val_loss = r->error.empty() ? r->loss : -1.0f;
        publish_waiting_row(link);
    }
}

}  // namespace arch
