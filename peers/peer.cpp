// peers/peer.cpp: the peer daemon's event loop.
#include "peers/peer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "compression/codec.h"
#include "core/data_manifest.h"
#include "core/error.h"
#include "core/float_store.h"
#include "core/machine_memory.h"
#include "core/param_layout.h"
#include "peers/control/run_status.h"
#include "peers/moment_sync.h"

namespace arch {

using protocol::Type;

namespace {
// An error that ends the peer's run (a refusal, data it cannot get): not one bad message to skip.
class Fatal : public Error {
public:
    using Error::Error;
};

std::string mib(uint64_t bytes) {
    char s[32];
    std::snprintf(s, sizeof(s), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
    return s;
}
}  // namespace

Peer::Peer(PeerOptions options) : options_(std::move(options)) {}
Peer::~Peer() = default;

std::string Peer::state_path(const std::string& name) const {
    return (options_.workdir.empty() ? std::string(".") : options_.workdir) + "/" + name;
}

void Peer::log(const std::string& line) const {
    if (options_.log) options_.log(line);
}

void Peer::emit(const RunEvent& event) const {
    if (options_.event) options_.event(event);
}

void Peer::publish(Link& link) {
    if (!options_.status) return;
    RunStatus& s = *options_.status;
    s.set_round(round_, replica_valid_ ? replica_->hash() : std::string());
    s.traffic(link);
    s.peer("self", [&](PeerRow& row) {  // this island, as the host sees it
        row.name = options_.name;
        row.island = island_;
        row.devices = static_cast<uint32_t>(options_.devices);
        row.steps_per_s = steps_per_s_;
        row.bytes_up = link.bytes_sent(Type::pseudo_grad) + link.bytes_sent(Type::moments);
        row.bytes_down = link.bytes_received(Type::update) + link.bytes_received(Type::state);
        row.connected = config_.has_value();
        row.in_sync = replica_valid_;
    });
}

std::optional<std::string> Peer::theta_hash() const {
    if (!replica_valid_) return std::nullopt;
    return replica_->hash();
}

void Peer::hello(Link& link) {
    protocol::Hello h;
    h.name = options_.name;
    h.steps_per_s = steps_per_s_;
    h.devices = static_cast<uint32_t>(options_.devices);
    h.round = round_;
    h.theta_hash = replica_valid_ && worker_ ? replica_->hash() : "";  // in sync only with an island to train
    link.send(host_, Type::hello, round_, protocol::encode(h));
}

void Peer::report_hash(Link& link) {
    protocol::HashReport r{round_, replica_valid_ ? replica_->hash() : std::string(64, '0')};
    link.send(host_, Type::hash_report, round_, protocol::encode(r));
    reported_at_ = Clock::real().now();
}

void Peer::on_welcome(Link& link, const protocol::Welcome& w) {
    reported_at_ = Clock::real().now();
    RunConfig c = parse_run_config(w.config_toml, "the host's run config");
    const bool same = config_ && config_->toml == c.toml && island_ == w.island_index;
    island_ = w.island_index;
    if (same && worker_) return;  // a rejoin: keep the island (and its inner AdamW state)
    if (same && data_) {  // a welcome again while fetching (a rejoin, or an answer to a repeated hello)
        if (!data_requested_) request_data(link);
        return;
    }
    // The data paths in the host's config are the host's: never opened here. The assignment names
    // this island's chunks by hash.
    model_ = run_model_config(c, static_cast<int>(w.data.vocab));
    const std::size_t n = ParamLayout(model_).num_params();
    const uint64_t most = options_.max_params > 0 ? options_.max_params : machine_memory_bytes() / sizeof(float);
    if (n > most)
        throw Fatal("the host's run has a model of " + std::to_string(n) + " parameters (" + std::to_string(n * sizeof(float) / 1000000) +
                    " MB in fp32); this peer takes at most " + std::to_string(most) +
                    (options_.max_params > 0 ? " (--max-params)" : " (one fp32 copy in this machine's RAM; --max-params to change)"));
    rounds_.reset();
    waiting_start_.reset();
    worker_.reset();
    FloatStore theta;  // zeros until the state comes
    if (options_.state_on_disk) {
        try {  // this machine's disk, not the message: no later message can mend it
            std::filesystem::create_directories(state_path(""));
            theta = FloatStore::on_disk(state_path("theta.replica"), n);
        } catch (const std::exception& e) {
            throw Fatal(std::string("--state-on-disk: ") + e.what());
        }
        log("θ's replica and the error-feedback residual are kept on disk, memory-mapped in " + state_path("") + " (" +
            std::to_string(n * sizeof(float) / 1000000) + " MB each): RAM the kernel can take back");
    } else {
        theta = FloatStore::zeros(n);  // no page of it is touched: the state's θ replaces it
    }
    replica_ = std::make_unique<diloco::GlobalModel>(std::move(theta), c.outer, run_fragments(c, model_),
                                                     diloco::GlobalModel::Holder::replica);
    replica_valid_ = false;
    config_ = std::move(c);
    accept_blobs(link);
    privacy_ = config_->privacy.on() ? std::make_unique<privacy::PrivacyBudget>(config_->privacy, run_updates(*config_)) : nullptr;
    if (options_.status && privacy_) options_.status->set_privacy(PrivacyFigures::of(*privacy_, 0));
    if (options_.status) options_.status->set_run(config_->name, static_cast<int>(run_updates(*config_)), mode_name(config_->mode), config_->islands);
    log("joined as island " + std::to_string(island_) + " of " + std::to_string(w.num_islands) + ": model " +
        describe(model_) + ", " + std::to_string(options_.devices) + " device(s)" +
        (options_.devices > 1 ? std::string(" (") + parallel_name(options_.parallel) + ")" : std::string()) +
        " on " + options_.device + "; working directory " + options_.workdir);
    emit({.kind = "joined", .islands = static_cast<int>(w.num_islands), .island = static_cast<int>(island_)});
    data_ = std::make_unique<IslandData>(w.data, options_.workdir, options_.data_dirs, [this](const std::string& l) { log(l); });
    if (data_->complete()) return data_ready(link);
    if (!w.data.served)
        throw Fatal("this island needs data that is not in its --data folders, and the host does not serve data "
                    "(data.serve = false). Put these shards (matched by hash, any name) in a --data folder:" +
                    data_->describe_missing());
    log("data: fetching " + std::to_string(data_->missing_chunks()) + " chunks (" + mib(data_->missing_bytes()) +
        ") of this island's " + mib(data_->bytes()) + " from the host");
    data_started_ = Clock::real().now();
    data_fetched_ = 0;
    request_data(link);
}

void Peer::accept_blobs(Link& link) const {
    // A state: θ's replica state and its header. An update: its header, θ's change (at most the run's
    // wire.down_codec's wire size, or fp32's, which the host sends where the codec could overflow θ;
    // never more than twice fp32's, whatever codec the host's config names) and, with DES-LOC, the
    // moments' mean. A data reply: the most tokens one carries, 4 bytes each, and their headers.
    // Anything else, or larger, is refused at its begin, before any memory is taken for it.
    const uint64_t n = replica_->theta().size(), headers = 64u << 10;
    const uint64_t change = std::max(compression::wire_bytes_limit(config_->outer.down_codec, n),
                                     compression::wire_bytes_limit("fp32", n));
    uint64_t update = 2 * headers + std::min<uint64_t>(change, 2 * sizeof(float) * n);
    if (config_->sync_moments_every > 0) update += protocol::moments_bytes(n);
    const uint64_t data = 4 * std::max<uint64_t>(protocol::kMaxReplyTokens, kMaxChunkTokens) +
                          16 * protocol::kMaxRequestChunks + headers;
    link.accept_blobs({{Type::state, replica_->replica_state_bytes() + headers}, {Type::update, update}, {Type::data, data}});
}

void Peer::request_data(Link& link) {
    data_requested_ = link.send(host_, Type::data_request, round_, protocol::encode(data_->next_request()));
}

void Peer::on_data(Link& link, std::span<const std::byte> blob) {
    if (!data_ || worker_) throw Error("data that was not asked for");
    const protocol::DataReply reply = protocol::decode_data_reply(blob);
    data_requested_ = false;
    if (!reply.error.empty())
        throw Fatal("the host could not send this island's data: " + reply.error + "; the island needs:" +
                    data_->describe_missing());
    for (const auto& [index, tokens] : reply.chunks) {
        try {
            data_->store(index, tokens);
        } catch (const Error& e) {
            throw Fatal(e.what());
        }
        data_fetched_ += tokens.size();  // bytes
    }
    const double s = Clock::real().seconds_since(data_started_);
    const double rate = s > 0 ? static_cast<double>(data_fetched_) / s : 0;  // bytes/s
    char eta[48] = "";
    if (rate > 0 && !data_->complete())
        std::snprintf(eta, sizeof(eta), ", ETA %.0f s", static_cast<double>(data_->missing_bytes()) / rate);
    char line[160];
    std::snprintf(line, sizeof(line), "data: fetched %s, %s to go, %.2f MiB/s%s", mib(data_fetched_).c_str(),
                  mib(data_->missing_bytes()).c_str(), rate / (1 << 20), eta);
    log(line);
    if (data_->complete()) data_ready(link);
    else request_data(link);
}

void Peer::data_ready(Link& link) {
    std::string shard;
    try {
        shard = data_->assemble();
    } catch (const Error& e) {  // a --data file that changed under us: nothing of it is used
        throw Fatal(e.what());
    }
    const RunConfig& c = *config_;
    log("data: island " + std::to_string(island_) + " trains on " + shard + " (" + mib(data_->bytes()) + ")");
    emit({.kind = "data_ready", .island = static_cast<int>(island_), .bytes = static_cast<int64_t>(data_fetched_)});
    data_.reset();
    try {
        worker_ = std::make_unique<diloco::IslandWorker>(model_, run_train_config(c, shard, "", c.seed + 1 + island_),
                                                         c.codec, options_.devices, options_.parallel, options_.device,
                                                         options_.device_options);
        if (options_.state_on_disk) worker_->keep_residual_on_disk(state_path("residual"));
    } catch (const Error& e) {  // this machine's devices, not the message: no later message can mend it
        throw Fatal(std::string("the island could not be started on ") + std::to_string(options_.devices) + " x " +
                    options_.device + ": " + e.what());
    }
    if (c.privacy.distributed()) {
        const privacy::PrivacyBudget& budget = *privacy_;
        worker_->add_privacy_share(c.privacy.clip, budget.noise_multiplier(), c.privacy.honest);
        char line[256];
        std::snprintf(line, sizeof(line),
                      "privacy: distributed; every pseudo-gradient is clipped to %g and gets its share of the noise, "
                      "N(0, (%.4g x %g)^2 / %d), before it is encoded; its inner loss is not sent",
                      c.privacy.clip, budget.noise_multiplier(), c.privacy.clip, c.privacy.honest);
        log(line);
    } else if (c.privacy.on()) {
        log("privacy: central; the host clips and noises the pseudo-gradients, and sees this island's as it is sent");
    }
    rounds_ = diloco::make_round_island(c, *worker_);
    report_hash(link);  // in sync: the host starts this island; else it sends the state
}

void Peer::on_state(Link& link, std::vector<std::byte> blob) {
    if (!replica_) throw Error("a state before the welcome");
    ByteReader r(blob, "state");
    const protocol::StateMeta meta = protocol::decode_state(r.bytes(4096));
    const std::span<const std::byte> state = r.view(blob.size());
    r.finish();
    const std::size_t bytes = blob.size(), at = static_cast<std::size_t>(state.data() - blob.data());
    replica_->load_replica_state(std::move(blob), at);  // θ stays where it came: not copied
    replica_valid_ = true;
    round_ = meta.round;
    if (replica_->hash() != meta.theta_hash) {
        replica_valid_ = false;
        throw Error("the state's θ hash does not match the host's");
    }
    const double took = Clock::real().seconds_since(reported_at_);
    char figures[128];
    std::snprintf(figures, sizeof(figures), ": a state of %.1f MB in %.2f s since it was asked for (%.1f MB/s)",
                  static_cast<double>(bytes) / 1e6, took, static_cast<double>(bytes) / 1e6 / std::max(took, 1e-9));
    log("synced to round " + std::to_string(round_) + ", θ " + replica_->hash().substr(0, 12) + figures);
    emit({.kind = "synced", .round = static_cast<int64_t>(round_), .theta = replica_->hash().substr(0, 12)});
    if (rounds_) {
        rounds_->restart();  // its next round starts from this θ
        waiting_start_.reset();
    }
    if (worker_) {
        // A resync: whatever this island sent before is settled by the state, and its error
        // feedback starts afresh (nothing it carried is known to match what was applied).
        worker_->reset_residual();
        residual_event(ResidualEvent::reset, round_);
        report_hash(link);
    }  // else once the island's data is ready
    publish(link);
}

bool Peer::on_update(Link& link, std::span<const std::byte> blob) {
    ByteReader r(blob, "update");
    const protocol::UpdateMeta meta = protocol::decode_update(r.bytes(1 << 16));
    const std::span<const std::byte> update = r.view(blob.size());
    std::optional<protocol::MomentsView> moments;  // DES-LOC: checked whole before anything changes, not copied
    if (!meta.moments_from.empty()) {
        if (!replica_) throw Error("an update before the welcome");
        moments = protocol::check_moments(r.view(blob.size()), replica_->theta().size());
        if (moments->round != meta.round)
            throw Error("the moments of round " + std::to_string(moments->round) + " in the update of round " +
                        std::to_string(meta.round));
    }
    r.finish();
    if (!replica_valid_ || meta.round != round_) {
        log("update for round " + std::to_string(meta.round) + " but θ is at round " + std::to_string(round_) +
            "; asking for the state");
        report_hash(link);
        return false;
    }
    const int fragment = round_fragment(*config_, meta.round);
    replica_->apply_update(update, fragment);
    round_ = meta.round + 1;
    if (worker_)
        for (const protocol::Applied& a : meta.applied)
            if (a.island == island_) worker_->settle(a.round);
    // Streaming and overlap: θ_i takes the update when its island says (overlap_turn).
    if (rounds_) rounds_->updated(fragment);
    if (worker_ && moments_round(*config_, meta.round)) take_moments(meta, moments);
    const std::string part = replica_->fragments() > 1 ? " to fragment " + std::to_string(fragment) : std::string();
    const std::string part_hash =
        replica_->fragments() > 1 ? ", fragment θ " + replica_->fragment_hash(fragment).substr(0, 16) : std::string();
    emit({.kind = replica_->hash() == meta.theta_hash ? "round_applied" : "theta_differs", .round = static_cast<int64_t>(meta.round),
          .islands = static_cast<int>(meta.islands), .theta = replica_->hash().substr(0, 12), .val_loss = meta.val_loss,
          .fragment = replica_->fragments() > 1 ? fragment : -1});
    if (replica_->hash() != meta.theta_hash) log("θ hash differs from the host's after round " + std::to_string(meta.round));
    else log("round " + std::to_string(meta.round) + " applied" + part + " (" + std::to_string(meta.islands) + " islands" +
             (meta.val_loss >= 0 ? ", the host's newest val loss " + std::to_string(meta.val_loss) : std::string()) + ")" + part_hash +
             ", θ " + replica_->hash().substr(0, 12) + " matches the host");
    report_hash(link);
    if (timed_round_ == meta.round) {
        // Communication: from handing over the Δ to holding the update (the Δ's transfer, waiting for
        // the other islands, the host's step, the update's transfer).
        char line[256];
        std::snprintf(line, sizeof(line), "round %llu times: compute %.2f s, communication %.2f s",
                      static_cast<unsigned long long>(meta.round), compute_s_,
                      Clock::real().seconds_since(sent_at_));
        log(line);
        if (first_step_at_) {  // in inner steps, overlapped ones too, against the time since the first began
            const double wall = Clock::real().seconds_since(*first_step_at_);
            std::snprintf(line, sizeof(line), "round %llu: island busy %.1f%% since its first inner step (%.2f s of inner steps in %.2f s)",
                          static_cast<unsigned long long>(meta.round), 100.0 * busy_s_ / std::max(wall, 1e-9), busy_s_, wall);
            log(line);
        }
    }
    if (options_.status) {
        RoundRow row;  // what a peer knows of the round it applied
        row.round = meta.round;
        row.islands = static_cast<int>(meta.islands);
        row.val_loss = meta.val_loss;
        row.bytes_down = blob.size();
        if (privacy_) {
            row.epsilon = privacy_->spent(replica_->updates_applied());
            options_.status->set_privacy(PrivacyFigures::of(*privacy_, replica_->updates_applied()));
        }
        options_.status->add_round(row);
        publish(link);
    }
    return !moments;
}

void Peer::on_round_start(Link& link, const protocol::RoundStart& m) {
    if (!worker_) {
        log("round " + std::to_string(m.round) + " started before this island's data is ready; it joins a later one");
        return;
    }
    if (!replica_valid_ || m.round != round_ || m.theta_hash != replica_->hash()) {
        report_hash(link);  // the host answers with the state
        return;
    }
    if (rounds_->busy()) {  // the last round's overlapped steps or merge first (overlap_turn)
        rounds_->next_round_known();
        waiting_start_ = m;
        return;
    }
    settle_dropped(m.held);
    if (options_.status) {
        options_.status->set_state("training");
        options_.status->set_steps(m.steps, "the host's round_start");
        publish(link);
    }
    residual_event(ResidualEvent::encoding, m.round);
    const auto t0 = Clock::real().now();
    int done = 0;
    diloco::RoundPlan plan;
    plan.round = m.round;
    plan.steps = static_cast<int>(m.steps);
    plan.schedule = rounds::ScheduleSpan{m.schedule_from, m.schedule_to};
    const int fragment = round_fragment(*config_, m.round);
    if (last_step_at_) {  // the island's time without work: from its last inner step to this round's first
        char idle[96];
        std::snprintf(idle, sizeof(idle), "round %llu: idle %.2f s since this island's last inner step",
                      static_cast<unsigned long long>(m.round), std::chrono::duration<double>(t0 - *last_step_at_).count());
        log(idle);
    }
    const auto on_step = [&](const StepStats& s) {
        ++done;
        stepped(s.seconds);
        if (options_.status) {
            options_.status->set_tokens_per_s(s.tokens_per_s);
            options_.status->set_inner_loss(s.loss);
        }
        if (done % 10 == 0 || done == static_cast<int>(m.steps)) {
            log("round " + std::to_string(m.round) + " step " + std::to_string(done) + "/" + std::to_string(m.steps) +
                " loss " + std::to_string(s.loss) + " lr " + std::to_string(s.lr) + " (" +
                std::to_string(static_cast<int>(s.tokens_per_s)) + " tok/s)");
            emit({.kind = "progress", .round = static_cast<int64_t>(m.round), .steps = done});
        }
    };
    diloco::RoundResult result = rounds_->run_round(*replica_, plan, fragment, m.round + 1 < run_updates(*config_), on_step);
    replica_->release_theta();  // on disk: the pages the round read go back to the page cache
    compute_s_ = Clock::real().seconds_since(t0);
    // Its own speed, what H from the link reads: the steps since its last send (overlapped ones too) over
    // their own seconds, not the encode's.
    steps_per_s_ = static_cast<float>(round_busy_s_ > 0 ? round_steps_ / round_busy_s_ : result.steps / compute_s_);
    round_busy_s_ = 0;
    round_steps_ = 0;
    if (moments_round(*config_, m.round)) send_moments(link, m.round);
    ByteWriter w;
    // Distributed privacy: the host is not trusted with anything the noise does not cover, the loss included.
    const float loss = config_->privacy.distributed() ? 0.0f : result.mean_loss;
    // steps: those trained since the round_start (fewer than asked when some were overlapped before it).
    w.bytes(protocol::encode(protocol::PseudoGradMeta{m.round, result.tokens, loss, static_cast<uint32_t>(result.steps), steps_per_s_}));
    const std::size_t payload_bytes = result.payload.size();
    // The meta in front of the Δ in the Δ's own memory (the codec leaves room): no copy of it.
    link.send_blob(host_, Type::pseudo_grad, m.round,
                   share_blob(w.take_before(std::move(result.payload)), worker_->payload_recycler()));
    log("round " + std::to_string(m.round) + " sent pseudo-gradient: " + std::to_string(payload_bytes) + " bytes" +
        (result.encoded_on.empty() ? std::string() : ", encoded " + result.encoded_on) +
        (result.steps != static_cast<int>(m.steps) || replica_->fragments() > 1
             ? " (fragment " + std::to_string(fragment) + ", after " + std::to_string(result.steps) + " steps, loss " +
                   std::to_string(result.mean_loss) + ")"
             : std::string()));
    emit({.kind = "sent", .round = static_cast<int64_t>(m.round), .steps = static_cast<int>(result.steps),
          .fragment = replica_->fragments() > 1 ? fragment : -1, .bytes = static_cast<int64_t>(payload_bytes)});
    sent_at_ = Clock::real().now();
    timed_round_ = m.round;
    if (options_.status) options_.status->peer("self", [&](PeerRow& row) { row.last_round = static_cast<int64_t>(m.round); });
    publish(link);
}

void Peer::send_moments(Link& link, uint64_t round) {
    // Before the Δ (one ordered queue): the host holds them when that Δ may close the round.
    const SharedBlob blob = share_blob(protocol::encode_moments(
        round, worker_->num_params(), [&](const protocol::MomentSlicePut& put) { worker_->read_moments(put); }));
    link.send_blob(host_, Type::moments, round, blob);
    log("round " + std::to_string(round) + " sent AdamW moments: " + std::to_string(blob->size()) + " bytes");
    emit({.kind = "moments_sent", .round = static_cast<int64_t>(round), .bytes = static_cast<int64_t>(blob->size())});
}

void Peer::take_moments(const protocol::UpdateMeta& meta, const std::optional<protocol::MomentsView>& mean) {
    const bool used = std::find(meta.moments_from.begin(), meta.moments_from.end(), island_) != meta.moments_from.end();
    if (!used || !mean) {
        log("round " + std::to_string(meta.round) + ": the update holds no moments of this island; it keeps its own");
        return;
    }
    // Widened from the update's bf16 a slice at a time, as the engine takes them.
    worker_->write_moments([&](std::size_t at, std::span<float> m, std::span<float> v) {
        for (std::size_t i = 0; i < m.size(); ++i) {
            m[i] = mean->m_at(at + i);
            v[i] = mean->v_at(at + i);
        }
    });
    MomentsHash held;  // of what the island holds now
    worker_->read_moments([&](StateVector which, std::size_t, std::span<const float> values) { held.add(which, values); });
    const std::string hash = held.hex().substr(0, 16);
    log("round " + std::to_string(meta.round) + ": AdamW moments replaced by the mean of " +
        std::to_string(meta.moments_from.size()) + " islands, moments " + hash);
    emit({.kind = "moments_taken", .round = static_cast<int64_t>(meta.round), .islands = static_cast<int>(meta.moments_from.size()),
          .hash = hash});
}

void Peer::overlap_turn(Link& link) {
    if (rounds_->merge_due()) {
        const diloco::Merged merged = rounds_->merge(*replica_);
        log(merged.what + " merged into this island's θ after " + std::to_string(merged.overlapped) + " overlapped steps");
        emit({.kind = "merged", .steps = merged.overlapped});
        return;
    }
    if (rounds_->overlapping()) {
        const auto t0 = Clock::real().now();
        const diloco::RoundResult r = rounds_->overlap_step();
        stepped(Clock::real().seconds_since(t0));
        if (options_.status) options_.status->set_inner_loss(r.mean_loss);
        return;
    }
    if (!rounds_->busy() && waiting_start_) {
        const protocol::RoundStart next = *waiting_start_;
        waiting_start_.reset();
        on_round_start(link, next);
    }
}

void Peer::stepped(double seconds) {
    if (options_.throttle > 0 && options_.throttle < 1.0) {  // as if the step took that much longer
        const double extra = seconds * (1.0 / options_.throttle - 1.0);
        std::this_thread::sleep_for(std::chrono::duration<double>(extra));
        seconds += extra;
    }
    last_step_at_ = Clock::real().now();
    if (!first_step_at_)
        first_step_at_ = *last_step_at_ - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    busy_s_ += seconds;
    round_busy_s_ += seconds;
    ++round_steps_;
}

void Peer::settle_dropped(std::optional<uint64_t> held) {
    // A round_start settles every Δ this island sent that no update named, except the one the host
    // says it still holds. The residual keeps what each one's rounding left, as for an applied one.
    for (const uint64_t round : worker_->unsettled()) {
        if (held && round == *held) continue;
        worker_->settle(round);
        log("round " + std::to_string(round) +
            ": the host did not apply this island's pseudo-gradient; its error-feedback residual keeps what "
            "that Δ's rounding left");
        emit({.kind = "not_applied", .round = static_cast<int64_t>(round)});
        residual_event(ResidualEvent::dropped, round);
    }
}

void Peer::residual_event(ResidualEvent what, uint64_t round) {
    if (options_.on_residual && worker_) options_.on_residual(what, round, worker_->residual());
}

void Peer::on_message(Link& link, LinkEvent& e) {
    switch (e.type) {
        case Type::welcome: on_welcome(link, protocol::decode_welcome(e.payload)); break;
        case Type::data: on_data(link, e.payload); break;
        case Type::state: on_state(link, std::move(e.payload)); break;
        case Type::update:
            // Applied, its memory takes the next one; not one that carried DES-LOC's moments (a buffer
            // several times an update's size, which no plain update would take).
            if (on_update(link, e.payload)) link.give_back(std::move(e.payload));
            break;
        case Type::round_start:
            if (options_.status && options_.status->paused()) {
                deferred_ = protocol::decode_round_start(e.payload);  // answered after resume
                log("paused: round " + std::to_string(deferred_->round) + " waits for resume");
                emit({.kind = "paused", .round = static_cast<int64_t>(deferred_->round)});
            } else {
                on_round_start(link, protocol::decode_round_start(e.payload));
            }
            break;
        case Type::reject: {
            const protocol::Reason reason = protocol::decode_reason(e.payload);
            log("host says: " + reason.text);
            if (reason.code == protocol::ReasonCode::say_hello_first) {
                hello(link);
                break;
            }
            emit({.kind = "left", .type = protocol::reason_name(reason.code), .detail = reason.text});
            throw Fatal("the host refused this peer: " + reason.text);
            break;
        }
        case Type::bye: {
            const protocol::Reason reason = protocol::decode_reason(e.payload);
            emit({.kind = "left", .type = protocol::reason_name(reason.code), .detail = reason.text});
            if (reason.code == protocol::ReasonCode::revoked)
                throw Fatal("the host revoked this peer's key: it is no longer in the run");
            log("host says goodbye: " + reason.text);
            finished_ = true;
            break;
        }
        default: log(std::string("ignored an unexpected ") + protocol::type_name(e.type) + " message");
    }
}

bool Peer::run(Link& link, const std::string& host_key) {
    host_ = host_key;
    link.accept_blobs({});  // no blob before the welcome says what the run's are
    hello(link);
    auto last_hello = Clock::real().now();
    bool disconnected = false;
    auto published = Clock::real().now();
    publish(link);
    while (!stop_ && !finished_) {
        if (options_.status && options_.status->leave_requested()) {
            link.send(host_, Type::bye, round_, protocol::encode({protocol::ReasonCode::left, options_.name + " left"}));
            for (int i = 0; i < 10; ++i) link.poll(20);  // hand the bye to the socket before it closes
            log("left the run");
            break;
        }
        if (deferred_ && !(options_.status && options_.status->paused())) {
            const protocol::RoundStart m = *deferred_;
            deferred_.reset();
            log("resumed: starting round " + std::to_string(m.round));
            on_round_start(link, m);
        }
        if (options_.status && Clock::real().now() - published > std::chrono::milliseconds(500)) {
            publish(link);
            published = Clock::real().now();
        }
        if (rounds_ && (rounds_->busy() || waiting_start_)) {
            try {
                overlap_turn(link);
            } catch (const Fatal&) {
                throw;
            } catch (const Error& err) {
                log(std::string(mode_name(config_->mode)) + ": " + err.what() + "; the island starts its next round from θ");
                rounds_->restart();
            }
        }
        // Between overlapped steps the link is only polled, not waited on.
        std::optional<LinkEvent> e;
        try {
            e = link.poll(rounds_ && rounds_->overlapping() ? 0 : 100);
        } catch (const std::exception& err) {  // bad_alloc & co from what the host sent: that message is lost, not the peer
            log(std::string("the link could not read a message: ") + err.what());
            continue;
        }
        if (!e) {
            // No welcome yet: the host may not be up; say hello again now and then.
            if (!config_ && Clock::real().now() - last_hello > std::chrono::seconds(2)) {
                hello(link);
                last_hello = Clock::real().now();
            }
            continue;
        }
        try {
            switch (e->kind) {
                case LinkEvent::Kind::refused:
                    emit({.kind = "key_refused"});  // once per refusal in a row: the socket says so once
                    continue;
                case LinkEvent::Kind::disconnected:
                    if (!disconnected) log("lost the host; reconnecting");
                    disconnected = true;
                    data_requested_ = false;  // a request may be lost with the connection: ask again once welcomed
                    continue;
                case LinkEvent::Kind::connected:
                    if (disconnected) {
                        log("reconnected to the host");
                        hello(link);
                        last_hello = Clock::real().now();
                    }
                    disconnected = false;
                    continue;
                case LinkEvent::Kind::message:
                    break;
            }
            on_message(link, *e);
        } catch (const Fatal&) {
            throw;
        } catch (const std::exception& err) {  // arch::Error, and bad_alloc from a message's declared sizes
            const std::string what = err.what();
            log(std::string("rejected a ") + protocol::type_name(e->type) + " message: " + what);
            emit({.kind = "rejected", .round = static_cast<int64_t>(e->round), .type = protocol::type_name(e->type), .detail = what});
        }
    }
    publish(link);
    if (options_.status) options_.status->set_state(finished_ ? "finished" : "stopped");
    return finished_;
}

}  // namespace arch
