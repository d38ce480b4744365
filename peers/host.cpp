// peers/host.cpp: the host's event loop (docs/protocol.md): admission, pseudo-gradient and moments checks,
// state for late joiners, data. What a round is belongs to its round policy (docs/rounds.md); the outer
// step and its update are host_update.cpp's, the checkpoints peers/host_checkpoints.h's.
#include "peers/host.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "compression/codec.h"
#include "core/checkpoint.h"
#include "core/corpus.h"
#include "core/data_loader.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/hf_import.h"
#include "core/token_shard.h"
#include "core/tokenizer.h"
#include "core/trainer.h"
#include "net/keys.h"
#include "peers/control/run_status.h"

namespace arch {

using protocol::Type;

namespace {
// θ of a warm start: model.init's llm.c checkpoint or model.init_hf's Hugging Face folder, which must
// hold the run's model (the peers build theirs from run.toml). Errors name the key.
std::vector<float> warm_start_theta(const RunConfig& c, const ModelConfig& model) {
    const char* key = c.init.empty() ? "model.init_hf" : "model.init";
    try {
        if (!c.init.empty()) return read_checkpoint_params(c.init, model);
        HfModel hf = import_hf(c.init_hf);
        if (describe(hf.config) != describe(model))
            throw Error("'" + c.init_hf + "' holds a " + describe(hf.config) + " model, the run's is " + describe(model));
        return std::move(hf.params);
    } catch (const Error& e) {
        throw Error(std::string(key) + ": " + e.what());
    }
}
}  // namespace

Host::Host(HostOptions options)
    : options_(std::move(options)),
      clock_(*options_.clock),
      roster_(options_.config.islands, clock_, [this](const std::string& line) { log(line); },
              [this](const RunEvent& event) { emit(event); }) {
    const RunConfig& c = options_.config;
    int vocab = 0;
    std::string train = c.train_data, val = c.val_data;
    if (c.train_data.empty()) {
        const PreparedCorpus corpus = ensure_bundled_corpus();
        vocab = Tokenizer::load(corpus.tokenizer_path).vocab_size();
        train = corpus.train_pattern;
        val = corpus.val_pattern;
    }
    model_config_ = run_model_config(c, vocab);
    // The data set, named by content for the peers (none of them opens these paths), and each
    // island's share of it, fixed for the run.
    shard_paths_ = shard_paths(train);
    manifest_ = build_manifest(train, choose_chunk_tokens(count_tokens(shard_paths_), c.islands));
    for (int i = 0; i < c.islands; ++i)
        assignment_.push_back(assign_chunks(manifest_, c.islands, i, c.assign,
                                            static_cast<uint64_t>(c.batch) * c.seq_len + 1));
    std::vector<float> theta = c.init.empty() && c.init_hf.empty() ? init_params(model_config_, c.seed)
                                                                    : warm_start_theta(c, model_config_);
    global_ = std::make_unique<diloco::GlobalModel>(std::move(theta), c.outer, run_fragments(c, model_config_));
    eval_ = std::make_unique<GlobalEval>(c, model_config_, std::move(val));
    policy_ = rounds::make_round_policy(c, [this](const std::string& line, const RunEvent& event) {
        log(line);
        emit(event);
    });
    if (c.sync_moments_every > 0) moments_ = std::make_unique<MomentPool>(c, global_->theta().size());
    if (c.privacy.on()) {
        privacy_ = std::make_unique<privacy::PrivacyBudget>(c.privacy, run_updates(c));
        log_privacy_plan();
    }
    deltas_ = std::make_unique<HostDeltas>(c, model_config_, *global_, privacy_.get(), [this](const std::string& line) { log(line); },
                                           [this](const RunEvent& event) { emit(event); });
    checkpoints_ = std::make_unique<HostCheckpoints>(
        c, model_config_, clock_, [this] { return checkpoint_source(); }, [this](const std::string& line) { log(line); },
        [this](const RunEvent& event) { emit(event); });
    if (std::optional<HostCheckpoints::Loaded> loaded = checkpoints_->load(*global_)) {
        round_ = first_round_ = loaded->round;
        roster_.restore(std::move(loaded->islands));
        deltas_->restore_screen_history(loaded->screen_history);
        log("resumed from " + c.checkpoint_dir + " at round " + std::to_string(round_) + ", θ " + global_->hash().substr(0, 12) +
            ", " + std::to_string(loaded->screen_history.size()) + " pseudo-gradient norms to screen against");
        emit({.kind = "resumed", .round = static_cast<int64_t>(round_), .theta = global_->hash().substr(0, 12), .detail = c.checkpoint_dir});
    } else if (!c.init.empty() || !c.init_hf.empty()) {
        const std::string& from = c.init.empty() ? c.init_hf : c.init;
        log("warm start: round 0 starts from " + from + ", θ " + global_->hash().substr(0, 12));
        emit({.kind = "warm_start", .round = 0, .theta = global_->hash().substr(0, 12), .detail = from});
    }
    ledger_.theta(round_, global_->hash());
}

Host::~Host() = default;

uint64_t Host::last_update() const {
    const uint64_t planned = run_updates(options_.config);
    return privacy_ ? std::min(planned, privacy_->affordable()) : planned;
}

void Host::log_privacy_plan() const {
    const privacy::DpSettings& d = options_.config.privacy;
    const privacy::PrivacyBudget& b = *privacy_;
    const uint64_t planned = run_updates(options_.config);
    char line[512];
    std::snprintf(line, sizeof(line),
                  "privacy: %s, every pseudo-gradient clipped to %g, noise multiplier %.4g (%s); %llu updates spend "
                  "epsilon %.4g of %g at delta %g",
                  d.mode.c_str(), d.clip, b.noise_multiplier(), b.derived() ? "derived from the budget" : "privacy.noise_multiplier",
                  static_cast<unsigned long long>(last_update()), b.spent(last_update()), d.epsilon, d.delta);
    log(line);
    if (b.affordable() < planned)
        log("privacy: the budget covers " + std::to_string(b.affordable()) + " of the run's " + std::to_string(planned) +
            " updates; the run ends there");
    if (d.distributed()) {
        std::snprintf(line, sizeof(line),
                      "privacy: distributed, assuming %d honest islands add their share; the host sees each island's "
                      "pseudo-gradient with its own share only, and against it the run spends epsilon %.4g",
                      d.honest, b.spent_against_host(last_update()));
        log(line);
    }
}

uint64_t Host::uplink_bytes(const Link& link) {
    return link.bytes_received(Type::pseudo_grad) + link.bytes_received(Type::moments);
}

void Host::log(const std::string& line) const {
    if (options_.log) options_.log(line);
}

void Host::emit(const RunEvent& event) const {
    if (options_.event) options_.event(event);
}

void Host::publish(const std::string& key, uint64_t up, uint64_t down) {
    if (!options_.status) return;
    const PeerState& p = roster_[key];
    options_.status->peer(key, [&](PeerRow& row) {
        if (row.fingerprint.empty()) row.fingerprint = net::fingerprint(key);
        row.name = p.name;
        row.island = p.island;
        row.steps_per_s = p.steps_per_s;
        if (up > 0) row.last_round = static_cast<int64_t>(p.last_round);  // it just contributed
        row.bytes_up += up;
        row.bytes_down += down;
        row.connected = p.connected;
        row.in_sync = p.in_sync;
        row.seconds_per_step = p.steps_per_s > 0 ? 1.0 / p.steps_per_s : 0;
        row.compute_s_per_round = p.round_compute_s;
        row.communication_s_per_round = std::max(0.0, p.round_wall_s - p.round_compute_s);
        row.utilisation = p.round_wall_s > 0 ? p.round_compute_s / p.round_wall_s : 0;
        if (link_) {
            const LinkStats st = link_->stats(key);
            row.came_from = st.came_from;
            row.came_in_on = st.came_in_on;
            row.up_bytes_per_s = st.receive_bytes_per_s;
            row.down_bytes_per_s = st.send_bytes_per_s;
            row.wire_bytes_sent = st.bytes_sent;
            row.wire_bytes_received = st.bytes_received;
        }
    });
}

void Host::publish_run(Link& link) {
    if (!options_.status) return;
    RunStatus& s = *options_.status;
    s.set_round(round_, global_->hash());
    s.traffic(link);
    const RunConfig& c = options_.config;
    double tokens_per_s = 0;  // every connected island's measured steps/s times its tokens per step
    for (const auto& [key, p] : roster_.peers())
        if (p.connected) tokens_per_s += p.steps_per_s * static_cast<double>(c.batch) * c.seq_len * c.grad_accum;
    s.set_tokens_per_s(tokens_per_s);
    if (privacy_) s.set_privacy(PrivacyFigures::of(*privacy_, round_));
    for (const auto& [key, p] : roster_.peers()) publish(key);
    published_ = Clock::real().now();
}

HostCheckpoints::Source Host::checkpoint_source() {
    HostCheckpoints::Source s;
    s.round = round_;
    s.islands = roster_.islands();
    s.theta = global_->theta_snapshot();
    s.global = global_.get();
    s.screen_history = deltas_->screen_history();
    return s;
}

void Host::send_state(Link& link, const std::string& key) {
    const std::vector<std::string> waiting = shipping_.withdraw_stale(link, key, global_->hash());
    const SharedBlob state = shipping_.current(round_, *global_);
    if (!link.send_blob(key, Type::state, round_, state)) {
        log(roster_[key].name + " is too far behind (its queue is full); dropping what waits for it");
        link.drop_queue(key);  // not what it sends: its pseudo-gradient may be on its way
        if (!link.send_blob(key, Type::state, round_, state)) return;
    }
    roster_[key].queued_from = round_;  // the state, then every update after it
    if (shipping_.queued_for(key)) {
        ledger_.sent_down(state->size());
        publish(key, 0, state->size());
        log("sending the global state of round " + std::to_string(round_) + " to " + roster_[key].name);
    }
    for (const std::string& other : waiting) send_state(link, other);
}

void Host::serve_data(Link& link, const std::string& key, const protocol::DataRequest& request) {
    const PeerState& p = roster_[key];
    const std::vector<DataChunk>& mine = assignment_.at(p.island);
    uint64_t tokens = 0;
    for (uint32_t i : request.chunks) {
        if (i >= mine.size())
            throw Error("a data_request for chunk " + std::to_string(i) + " of an assignment of " + std::to_string(mine.size()));
        tokens += mine[i].tokens;
    }
    if (request.chunks.size() > 1 && tokens > protocol::kMaxReplyTokens)
        throw Error("a data_request for " + std::to_string(tokens) + " tokens (at most " + std::to_string(protocol::kMaxReplyTokens) + ")");
    protocol::DataReply reply;
    if (!options_.config.serve) {
        reply.error = "this host does not serve data (data.serve = false)";
    } else {
        try {
            for (uint32_t i : request.chunks)
                reply.chunks.emplace_back(i, read_token_bytes(shard_paths_[mine[i].shard], mine[i].offset, mine[i].tokens));
        } catch (const Error& e) {
            reply.chunks.clear();
            reply.error = std::string("the host cannot read its training data: ") + e.what();
            log(reply.error);
        }
    }
    const SharedBlob blob = share_blob(protocol::encode(reply));
    if (!link.send_blob(key, Type::data, round_, blob))
        log(p.name + " asked for data with 3 replies still queued for it; the request is dropped");
}

void Host::send_update(Link& link, const std::string& key, uint64_t round, const SharedBlob& blob) {
    PeerState& p = roster_[key];
    p.awaited = p.in_sync;  // the update is meant for it: the barrier waits for its report
    p.in_sync = false;      // until its hash report comes back
    if (!p.connected) {  // nothing piles up for a peer that is away: back, it says hello and gets the state
        p.queued_from = UINT64_MAX;
        return;
    }
    if (!link.send_blob(key, Type::update, round, blob)) {
        send_state(link, key);  // too many blobs already wait for it: its queue goes, the state replaces it
        return;
    }
    ledger_.sent_down(blob->size());
    publish(key, 0, blob->size());
}

rounds::RunSnapshot Host::view(Link& link) {
    view_.clear();
    for (const auto& [key, p] : roster_.peers()) {
        if (!p.welcomed) continue;
        rounds::IslandView i;
        i.key = key;
        i.index = p.island;
        i.name = p.name;
        i.connected = p.connected;
        i.ready = p.connected && p.in_sync;
        i.busy = p.busy;
        i.started_round = p.started_round;
        i.steps_per_s = p.steps_per_s;
        if (p.steps_per_s > 0) {
            const double measured = 1.0 / p.steps_per_s;
            i.step_s = p.reported_steps_per_s > 0 ? std::min(measured, 1.0 / p.reported_steps_per_s) : measured;
        }
        const LinkStats st = link.stats(key);
        i.delta_bytes = st.receiving;
        i.delta_bytes_per_s = st.receive_bytes_per_s;
        i.delta_moving = st.receiving > 0 && transfer_alive(st, st.receiving, st.received, st.receive_bytes_per_s, st.receiving_since);
        view_.push_back(std::move(i));
    }
    rounds::RunSnapshot v;
    v.round = round_;
    v.rounds = run_updates(options_.config);  // the schedule's length, even when a privacy budget ends the run sooner
    v.seconds_open = ledger_.seconds_open();
    v.sync_s = ledger_.last_sync_s();
    v.islands = view_;
    return v;
}

void Host::start_island(Link& link, const rounds::Start& start) {
    // After the last update no island is started again: it would train a round nobody waits for, and
    // miss the host's bye while sending it.
    if (round_ >= last_update()) return;
    PeerState* found = roster_.find(start.key);
    if (!found || !found->welcomed) return;
    PeerState& p = *found;
    p.busy = true;
    p.started_round = round_;
    p.started_at = clock_.now();
    p.started_steps = start.steps;
    if (moments_) moments_->drop(start.key);  // anything it sent before this round_start is stale
    protocol::RoundStart m{round_, start.steps, global_->hash(), start.schedule.from, start.schedule.to, start.held};
    link.send(start.key, Type::round_start, round_, protocol::encode(m));
}

void Host::start_islands(Link& link, const std::vector<rounds::Start>& starts) {
    for (const rounds::Start& s : starts) start_island(link, s);
}

void Host::offer_round(Link& link, const std::string& key) {
    if (!policy_->open()) return;
    const rounds::RunSnapshot v = view(link);
    if (const rounds::IslandView* i = v.find(key))
        if (std::optional<rounds::Start> s = policy_->on_ready(v, *i)) start_island(link, *s);
}

bool Host::gathered(Link& link, Clock::time_point join_deadline) const {
    const RunConfig& c = options_.config;
    const int ready = roster_.ready();
    // Islands not seen yet, and every island at this host's first round (a restarted host's islands
    // come back one by one), are waited for until join_timeout_s; after it (a run started short,
    // or an island revoked) every round waits as after any update, for the islands the update was
    // meant for (PeerState::waits) and a newcomer's first state while it moves (PeerState::joins); any
    // other joiner joins the round after it is in sync, so one that never gets there (a peer that says
    // hello and nothing else) holds nothing back.
    const bool first_wait = (round_ == first_round_ || roster_.islands().size() < static_cast<std::size_t>(c.islands)) &&
                            clock_.now() <= join_deadline;
    const bool all_here =
        ready >= c.islands || (!first_wait && ready > 0 && roster_.every_island_in_sync() && !joiner_moving(link));
    // Connection events are advisory (a dead peer's queued frames can look like a reconnect),
    // so the wait for hash reports after an update has a deadline like every other wait.
    return all_here || (!first_wait && ready > 0 && barrier_passed(link));
}

void Host::start_round(Link& link) {
    ledger_.open(uplink_bytes(link));
    const rounds::RoundPolicy::Opening opening = policy_->open_round(view(link));
    start_islands(link, opening.starts);
    const rounds::ChosenSteps steps = policy_->round_steps();
    log("round " + std::to_string(round_) + " started with " + std::to_string(opening.islands) + " islands, H " +
        std::to_string(steps.steps) + " (" + steps.why + ")");
    emit({.kind = "round_started", .round = static_cast<int64_t>(round_), .islands = static_cast<int>(opening.islands),
          .steps = static_cast<int>(steps.steps), .detail = steps.why});
    if (options_.status) {
        options_.status->set_state("training");
        options_.status->set_steps(steps.steps, steps.why);
        publish_run(link);
    }
}

void Host::on_hello(Link& link, const std::string& key, const protocol::Hello& h) {
    const RunConfig& c = options_.config;
    const std::optional<HostRoster::Seat> seat = roster_.seat(key);
    if (!seat) {
        link.send(key, Type::reject, round_, protocol::encode({protocol::ReasonCode::run_full, "the run is full (" + std::to_string(c.islands) + " islands)"}));
        log("refused " + h.name + " (" + short_key(key) + "): the run is full");
        emit({.kind = "refused", .peer = h.name, .type = "run_full"});
        return;
    }
    PeerState& p = roster_[key];
    p.name = h.name;
    p.island = seat->island;
    p.connected = true;
    p.welcomed = true;
    p.busy = false;  // a peer that says hello has no round in progress
    p.last_delta_at = {};
    if (options_.status) options_.status->peer(key, [&](PeerRow& row) { row.devices = h.devices; });
    p.in_sync = h.round == round_ && h.theta_hash == global_->hash();
    // A newcomer's island goes into a checkpoint once it holds θ, not while its state moves: until then
    // its seat holds no history, and a checkpoint (θ and the outer state again) would take the disk and
    // the host's cores from the state. A host restarted before then seats it again.
    if (seat->newcomer) {
        if (p.in_sync) checkpoints_->island_map_changed();
        else p.seat_unsaved = true;
    }
    p.awaited = false;  // not in sync: it joins a round once it is
    p.joining = seat->newcomer && !p.in_sync;  // but its first state, once, is waited for while it moves
    p.queued_from = p.in_sync ? round_ : UINT64_MAX;
    protocol::Welcome w{p.island, static_cast<uint32_t>(c.islands), c.toml, round_, global_->hash(), {}};
    w.data.vocab = static_cast<uint32_t>(model_config_.vocab_size);
    w.data.served = c.serve;
    w.data.token_bytes = static_cast<uint8_t>(manifest_.token_bytes);
    w.data.shards = manifest_.shards;
    w.data.chunks = assignment_[p.island];
    link.send(key, Type::welcome, round_, protocol::encode(w));
    const LinkStats came = link.stats(key);  // which of the host's addresses it reached (docs/net.md)
    log("admitted " + h.name + " (" + short_key(key) + ") as island " + std::to_string(p.island) +
        (p.in_sync ? ", in sync" : ", needs the state") +
        (came.came_in_on.empty() ? std::string() : "; it came in on " + came.came_in_on + " from " + came.came_from));
    emit({.kind = "admitted", .island = static_cast<int>(p.island), .peer = h.name, .type = p.in_sync ? "in_sync" : "needs_state"});
    publish(key);
    if (!p.in_sync) send_state(link, key);
    else offer_round(link, key);
}

void Host::revoke(Link& link, const std::string& key) {
    PeerState* found = roster_.find(key);
    if (!found && !roster_.islands().count(key)) return;  // never admitted: the allow-list was all it had
    const std::string who = (found ? found->name : std::string("a peer")) + " (" + short_key(key) + ")";
    if (found) {
        PeerState& p = *found;
        link.forget(key);  // what waits for it is freed, and cannot hold back the bye
        if (p.welcomed) link.send(key, Type::bye, round_, protocol::encode({protocol::ReasonCode::revoked, "revoked"}));
        p.connected = p.welcomed = p.busy = p.in_sync = false;
        publish(key);
    }
    shipping_.settled(key);
    if (moments_) moments_->drop(key);
    const bool in_round = policy_->on_gone(key, true);  // what it sent that is not applied yet goes with it
    std::string freed;
    RunEvent event{.kind = "revoked", .round = in_round ? static_cast<int64_t>(round_) : -1, .peer = found ? found->name : ""};
    if (const std::optional<uint32_t> island = roster_.release(key)) {
        checkpoints_->island_map_changed();
        freed = "; island " + std::to_string(*island) + " is free for a later invitee";
        event.island = static_cast<int>(*island);
    }
    log("revoked " + who + freed + (in_round ? "; round " + std::to_string(round_) + " goes on without it" : ""));
    emit(event);
}

void Host::on_pseudo_grad(Link& link, const std::string& key, std::span<const std::byte> blob, double transfer_seconds,
                          double since_begin_seconds) {
    const RunConfig& c = options_.config;
    PeerState& p = roster_[key];
    ByteReader r(blob, "pseudo_grad");
    const protocol::PseudoGradMeta meta = protocol::decode_pseudo_grad(r.bytes(4096));
    const std::span<const std::byte> payload = r.view(blob.size());
    r.finish();
    if (!p.busy)
        throw Error("a pseudo-gradient for round " + std::to_string(meta.round) +
                    " that was not asked for (a duplicate, or sent again after a reconnect)");
    if (meta.round != p.started_round)
        throw Error("a pseudo-gradient for round " + std::to_string(meta.round) + ", but this island was started on round " +
                    std::to_string(p.started_round));
    {
        const rounds::RunSnapshot v = view(link);
        const rounds::IslandView* self = v.find(key);
        if (!self) throw Error("a pseudo-gradient from an island that is not admitted");
        policy_->admit(v, *self, meta.round);  // the round policy's word on the round (late, a second one)
    }
    // The weight in the mean is the tokens the island says it trained on: at most what the steps it
    // was asked for hold.
    const double max_tokens = static_cast<double>(p.started_steps) * c.batch * c.seq_len * c.grad_accum;
    if (!(meta.tokens > 0)) throw Error("a pseudo-gradient with a token weight of " + std::to_string(meta.tokens));
    const double tokens = std::min(meta.tokens, max_tokens);
    if (tokens < meta.tokens) {
        log("island " + std::to_string(p.island) + " (" + p.name + ") claimed " + std::to_string(meta.tokens) +
            " tokens for round " + std::to_string(meta.round) + "; counted " + std::to_string(max_tokens) +
            " (its steps x B x T x grad_accum)");
        emit({.kind = "weight_capped", .round = static_cast<int64_t>(meta.round), .island = static_cast<int>(p.island), .peer = p.name});
    }
    // The size first, nothing is decoded in vain: θ's, or in streaming mode the round's fragment's.
    const std::size_t expected = global_->fragment(round_fragment(c, meta.round)).size;
    const compression::WireInfo info = compression::inspect(payload);
    if (info.count != expected)
        throw Error("pseudo-gradient of " + std::to_string(info.count) + " values, " +
                    (global_->fragments() > 1 ? "the round's fragment has " : "the model has ") + std::to_string(expected));
    // The run's codec and nothing else: what the host holds of a Δ is that codec's payload at most.
    if (const compression::CodecSpec run = compression::parse_codec_spec(c.codec); info.codec != run.codec || info.block != run.block)
        throw Error("a pseudo-gradient encoded as " + std::string(compression::codec_name(info.codec)) +
                    (info.block ? " (block " + std::to_string(info.block) + ")" : "") + "; the run's wire.codec is " + c.codec);
    const Clock::time_point decode_start = Clock::real().now();
    rounds::Contribution contribution{p.island, key, p.name, meta.round, {}, tokens, meta.mean_loss, nullptr, 0, 1.0f};
    deltas_->take_in(payload, expected, contribution);
    ledger_.decoded(Clock::real().seconds_since(decode_start), since_begin_seconds);
    // Speed by the host's clock (for Dynamic Local Updates, and the bound on what the peer reports, which
    // only H from the link reads: Host::view). The time its Δ spent on the wire is the link's, not the
    // island's; it is counted from the Δ's first chunk, which needs the Δ, so no island can look faster
    // than it computes and cut the others' H.
    // An island that trained some of the round's steps before its round_start (overlap and streaming
    // mode) says how many it trained after it; it can only make itself look slower by it.
    const double took = clock_.seconds_since(p.started_at) - transfer_seconds;
    const uint32_t trained = std::clamp<uint32_t>(meta.steps, 1, std::max<uint32_t>(p.started_steps, 1));
    if (took > 0) p.steps_per_s = static_cast<float>(trained / took);
    // Its round: from its last Δ to this one, of which its inner steps (all it was asked for, at the
    // speed just measured) took round_compute_s; the rest went to the link and to waiting.
    const Clock::time_point now = clock_.now();
    if (p.last_delta_at != Clock::time_point{} && took > 0) {
        p.round_wall_s = std::chrono::duration<double>(now - p.last_delta_at).count();
        p.round_compute_s = std::min(p.round_wall_s, std::max<uint32_t>(p.started_steps, trained) * took / trained);
    }
    p.last_delta_at = now;
    p.reported_steps_per_s = std::isfinite(meta.steps_per_s) && meta.steps_per_s > 0 ? meta.steps_per_s : 0.0f;
    p.last_round = meta.round;
    p.busy = false;
    publish(key, blob.size(), 0);
    ledger_.took_in(static_cast<double>(expected) * sizeof(float));
    const rounds::Arrival a = policy_->on_arrival(view(link), std::move(contribution));
    if (!a.note.empty()) log(a.note);
    if (!a.event.kind.empty()) emit(a.event);
    if (a.restart) start_island(link, *a.restart);
}

void Host::note_update_held() {
    if (!roster_.every_island_in_sync()) return;
    if (std::optional<std::string> line = ledger_.update_held()) log(*line);
}

void Host::on_moments(const std::string& key, std::vector<std::byte> blob) {
    if (!moments_) throw Error("moments in a run that syncs none (outer.sync_moments_every = 0)");
    const PeerState& p = roster_[key];
    const std::size_t bytes = blob.size();
    moments_->accept(key, std::move(blob), p.busy, p.started_round, round_);  // role, round, size, finite: or nothing is kept
    ledger_.took_in(static_cast<double>(bytes));  // fp32 already: the round's ratio counts them as sent
    publish(key, bytes, 0);
}

void Host::handle(Link& link, LinkEvent& e) {
    PeerState* found = roster_.find(e.peer);
    if (e.kind == LinkEvent::Kind::connected) {
        if (found) found->connected = true;
        return;
    }
    if (e.kind == LinkEvent::Kind::disconnected) {
        if (!found) return;
        found->connected = false;
        publish(e.peer);
        if (policy_->on_gone(e.peer, false)) {
            log("island " + std::to_string(found->island) + " (" + found->name + ") disconnected; round " +
                std::to_string(round_) + " goes on without it");
            emit({.kind = "dropped", .round = static_cast<int64_t>(round_), .island = static_cast<int>(found->island),
                  .peer = found->name, .type = "disconnected"});
        }
        return;
    }
    if (e.kind != LinkEvent::Kind::message) return;  // refused: a peer's side only
    if (!roster_.within_budget(e)) return;
    found = roster_.find(e.peer);
    if (e.type == Type::hello) {
        on_hello(link, e.peer, protocol::decode_hello(e.payload));
        return;
    }
    if (!found || !found->welcomed) {
        link.send(e.peer, Type::reject, round_, protocol::encode({protocol::ReasonCode::say_hello_first, "say hello first"}));
        return;
    }
    PeerState& p = *found;
    p.connected = true;
    switch (e.type) {
        case Type::pseudo_grad:
            // Its memory is not given back to the link (Link::give_back): it is taken in decoded, or
            // out of its zstd stage, into memory of its own, and the received bytes kept until the next
            // Δs would sit beside those through the aggregation, the host's peak.
            on_pseudo_grad(link, e.peer, e.payload, e.transfer_seconds, e.since_begin_seconds);
            break;
        case Type::moments:
            on_moments(e.peer, std::move(e.payload));
            break;
        case Type::hash_report: {
            const protocol::HashReport h = protocol::decode_hash_report(e.payload);
            p.in_sync = h.round == round_ && h.theta_hash == global_->hash();
            if (p.in_sync) {
                p.joining = false;  // its first state is behind it
                if (std::exchange(p.seat_unsaved, false)) checkpoints_->island_map_changed();
                shipping_.settled(e.peer);
                note_update_held();
            }
            publish(e.peer);
            if (!p.in_sync && catching_up(p, h)) {
                // Behind, not astray: the updates since are queued for it in order (send_update),
                // and its next report says where it got to. A state now would only overtake them.
            } else if (!p.in_sync) {
                p.awaited = p.joining = false;  // astray: no barrier waits for it until it is in sync again
                log("island " + std::to_string(p.island) + " reports θ " + h.theta_hash.substr(0, 12) + " at round " +
                    std::to_string(h.round) + ", host has " + global_->hash().substr(0, 12) + " at " + std::to_string(round_));
                send_state(link, e.peer);
            } else if (!p.busy) {
                offer_round(link, e.peer);
            }
            break;
        }
        case Type::data_request:
            serve_data(link, e.peer, protocol::decode_data_request(e.payload));
            break;
        case Type::bye:
            p.connected = false;
            policy_->on_gone(e.peer, false);
            link.forget(e.peer);  // what waits for it, or from it, is freed
            shipping_.settled(e.peer);
            publish(e.peer);
        {
            const protocol::Reason reason = protocol::decode_reason(e.payload);
            log(p.name + " left: " + reason.text);
            emit({.kind = "peer_left", .island = static_cast<int>(p.island), .peer = p.name, .type = protocol::reason_name(reason.code)});
            break;
        }
        default:
            throw Error(std::string("unexpected ") + protocol::type_name(e.type) + " message from a peer");
    }
}

bool Host::catching_up(const PeerState& p, const protocol::HashReport& h) const {
    if (h.round >= round_ || h.round < p.queued_from) return false;
    // Further back than the updates that may wait in its queue: the state it is.
    const std::optional<std::string> then = ledger_.theta_at(h.round);
    return then && *then == h.theta_hash;
}

bool Host::transfer_alive(const LinkStats& s, uint64_t bytes, uint64_t moved, double rate, Clock::time_point since) const {
    const double margin = 2 * options_.config.heartbeat_timeout_s;
    // The link stamps its transfers on the real clock (link.h): they are read on it too, whatever the
    // host's own clock is.
    const Clock& link_clock = Clock::real();
    if (link_clock.seconds_since(s.last_progress) > margin) return false;  // stalled (or nothing moved at all)
    if (bytes == 0) return true;  // just finished: its answer is on the way
    // Not measured yet: a link is assumed no slower than 100 kB/s (0.8 Mbit/s), so that a peer
    // trickling a chunk now and then still cannot hold a wait open forever: after the margin, its
    // payload must have moved at that rate over the transfer's whole life (from its first begin),
    // and the whole of it is given twice its bytes at the link's rate.
    constexpr double kSlowestAssumed = 100e3;
    const double age = link_clock.seconds_since(since);
    if (static_cast<double>(moved) < kSlowestAssumed * (age - margin)) return false;
    return age < 2.0 * static_cast<double>(bytes) / std::max(rate, kSlowestAssumed) + margin;
}

bool Host::sending_moves(Link& link, const std::string& key) const {
    const LinkStats s = link.stats(key);
    return transfer_alive(s, s.sending, s.sent, s.send_bytes_per_s, s.sending_since);
}

bool Host::joiner_moving(Link& link) const {
    for (const auto& [key, p] : roster_.peers())
        if (p.joins() && sending_moves(link, key)) return true;
    return false;
}

bool Host::barrier_passed(Link& link) const {
    if (clock_.now() <= sync_deadline_) return false;
    // An island still receiving the update (or that just has: its hash report is on the way) is waited
    // for, as long as the transfer moves and is within its bytes at the link's measured rate; so is a
    // newcomer's first state.
    for (const auto& [key, p] : roster_.peers())
        if ((p.waits() || p.joins()) && sending_moves(link, key)) return false;
    return true;
}

void Host::accept_blobs(Link& link) {
    // Peers send the host two kinds of blob: a pseudo-gradient, encoded with the run's wire.codec, so at
    // most that codec's wire size for θ (compression::wire_bytes_limit: an fp4 Δ is about P/8) after
    // its metadata (a length and at most 4096 bytes; topk: for the k its fraction keeps); and with
    // DES-LOC its moments: exactly m and v in bf16 and a 16-byte header. A transfer declaring more is refused unread.
    const uint64_t delta = compression::wire_bytes_limit(options_.config.codec, global_->theta().size());
    std::map<Type, uint64_t> accepted{{Type::pseudo_grad, 8 + 4096 + delta}};
    if (moments_) accepted[Type::moments] = protocol::moments_bytes(global_->theta().size());
    link.accept_blobs(accepted);
}

void Host::take_message(Link& link, const std::function<void(LinkEvent&)>& handle_it) {
    std::optional<LinkEvent> e;
    try {
        // While a checkpoint's outer state is staged (4 MiB a turn), a turn with nothing to read does
        // not wait for a message: the staging goes on at the disk's pace while the link is quiet.
        e = link.poll(checkpoints_->staging() ? 0 : 50);
        if (e) handle_it(*e);
    } catch (const std::exception& err) {  // arch::Error, and bad_alloc & co: never the host's end
        if (!e) {
            log(std::string("the link could not read a message: ") + err.what());
            return;
        }
        log("rejected a " + std::string(protocol::type_name(e->type)) + " message from " + roster_.who(e->peer) + ": " +
            err.what());
        const PeerState* from = roster_.find(e->peer);
        emit({.kind = "rejected", .round = static_cast<int64_t>(e->round), .island = from ? static_cast<int>(from->island) : -1,
              .peer = from ? from->name : "", .type = protocol::type_name(e->type), .detail = err.what()});
    }
}

void Host::turn(Link& link, Clock::time_point join_deadline) {
    if (options_.status && options_.status->leave_requested()) stop_ = true;
    if (options_.status && Clock::real().now() - published_ > std::chrono::milliseconds(500)) publish_run(link);
    if (options_.revoked && Clock::real().now() - revoked_checked_ > std::chrono::seconds(1)) {
        revoked_checked_ = Clock::real().now();
        for (const std::string& key : options_.revoked()) revoke(link, key);
    }
    take_message(link, [&](LinkEvent& e) { handle(link, e); });
    checkpoints_->pump();
    take_eval(link);
    if (!policy_->open()) {
        // Paused: no new round starts until resume.
        if (!(options_.status && options_.status->paused()) && gathered(link, join_deadline)) start_round(link);
    } else if (policy_->update_due(view(link))) {
        make_update(link);
    }
}

void Host::drain(Link& link) {
    // Let the last update reach every connected island (and its hash come back) before saying bye; an
    // island still receiving it on a slow link is waited for while the transfer moves (barrier_passed).
    const Clock::time_point until = clock_.after(2 * options_.config.heartbeat_timeout_s + 5);
    while (!stop_ && !roster_.every_island_in_sync() && (clock_.now() < until || !barrier_passed(link))) {
        take_message(link, [&](LinkEvent& e) {
            if (e.type != Type::pseudo_grad && e.type != Type::moments) handle(link, e);
        });
        checkpoints_->pump();
        take_eval(link);
    }
}

void Host::say_goodbye(Link& link) {
    for (const auto& [key, p] : roster_.peers()) {
        if (!p.welcomed) continue;
        link.forget(key);  // what is still queued for it (a stale state, an update it gave up on) must not hold back the bye
        link.send(key, Type::bye, round_, protocol::encode({protocol::ReasonCode::run_finished, "the run is finished"}));
    }
    for (int i = 0; i < 10; ++i) link.poll(20);  // hand the byes to the socket before it closes
    std::string traffic = "bytes on the wire by message type (sent/received):";
    for (Type t : {Type::hello, Type::welcome, Type::round_start, Type::pseudo_grad, Type::moments, Type::update,
                   Type::hash_report, Type::state, Type::data_request, Type::data, Type::bye})
        if (link.bytes_sent(t) + link.bytes_received(t) > 0)
            traffic += std::string(" ") + protocol::type_name(t) + " " + std::to_string(link.bytes_sent(t)) + "/" +
                       std::to_string(link.bytes_received(t));
    log(traffic);
}

void Host::run(Link& link) {
    const RunConfig& c = options_.config;
    link_ = &link;
    accept_blobs(link);
    link.charge_transfers([this](const std::string& key) { return roster_.transfer_within_budget(key); });
    const Clock::time_point join_deadline = clock_.after(c.join_timeout_s);
    const uint64_t updates = last_update();
    log("waiting for " + std::to_string(c.islands) + " islands (round " + std::to_string(round_) + " of " +
        std::to_string(updates) + (updates != static_cast<uint64_t>(c.rounds) ? ", one fragment each" : "") + ")");
    emit({.kind = "waiting", .round = static_cast<int64_t>(round_), .islands = c.islands});
    publish_run(link);
    // The starting θ's val loss, while the islands gather (the first evaluation also warms the model up).
    eval_->start(GlobalEval::kStart, global_->theta_snapshot());
    while (!stop_ && round_ < updates) turn(link, join_deadline);
    // The last checkpoint is written while the last update drains: the writer takes it once it is free,
    // and finish below waits for it (or, after a stop, writes it at once).
    checkpoints_->at_end();
    drain(link);
    checkpoints_->finish();
    if (!stop_) eval_->wait();  // the last θ's val loss, for the last row; a stopped host waits for none
    take_eval(link);
    publish_waiting_row(link);
    say_goodbye(link);
    publish_run(link);
    link_ = nullptr;
    if (round_ >= updates && updates < run_updates(c)) {
        char line[200];
        std::snprintf(line, sizeof(line), "privacy: update %llu would spend epsilon %.4g, above the budget of %g; no more rounds",
                      static_cast<unsigned long long>(updates + 1), privacy_->spent(updates + 1), c.privacy.epsilon);
        log(line);
    }
    if (options_.status) options_.status->set_state(round_ >= updates ? "finished" : "stopped");
    log(round_ >= updates ? "run finished after " + std::to_string(round_) + " rounds" : "stopped");
    emit({.kind = round_ >= updates ? "finished" : "stopped", .round = static_cast<int64_t>(round_)});
}

}  // namespace arch
