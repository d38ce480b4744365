// peers/host.h: the host of a DiLoCo run: admits peers (their keys are already on the allow-list;
// identity is the authenticated key), assigns each a stable island index (its data slice), runs
// the event loop of the rounds, checks pseudo-gradients, aggregates them through outer_optimizer,
// sends the update everyone applies (naming the contributions it used), checks the islands' θ
// hashes, and brings late joiners and restarted peers up to date with the full state. With DES-LOC
// on, the updates of its rounds also carry the mean of the islands' AdamW moments
// (peers/moment_sync.h). How rounds go (which islands start, with how many steps, what an update
// holds) is its round policy's (peers/rounds/round_policy.h): the host knows no mode.
// The Host is the event loop and the protocol's handlers (host.cpp) and the outer step
// (host_update.cpp); each concern beside them is a part of its own:
// - HostRoster (host_roster.h): the peers, their island indexes and message budgets;
// - StateShipping (state_shipping.h): the state of θ for joiners, one copy per θ;
// - HostDeltas (host_deltas.h): the pseudo-gradients, taken in and vetted (screen, privacy);
// - RoundLedger (round_ledger.h): the rounds' rows and timings, the recent θ hashes;
// - HostCheckpoints (host_checkpoints.h): when to checkpoint, the snapshot, and resuming from it;
// - GlobalEval (global_eval.h): the validation loss of θ, on a thread of its own.
// Restart: a host started on the same checkpoint folder resumes from the last finished round.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/data_manifest.h"
#include "peers/host_checkpoints.h"
#include "peers/host_deltas.h"
#include "peers/host_roster.h"
#include "peers/diloco/global_model.h"
#include "peers/global_eval.h"
#include "peers/link.h"
#include "peers/moment_sync.h"
#include "peers/round_ledger.h"
#include "peers/rounds/round_policy.h"
#include "peers/run_config.h"
#include "peers/run_events.h"
#include "peers/state_shipping.h"
#include "privacy/privacy_budget.h"

namespace arch {

class RunStatus;  // peers/control/run_status.h

struct HostOptions {
    RunConfig config;
    std::function<void(const std::string&)> log;     // one line per event
    std::function<void(const RoundRow&)> on_round;   // one call per finished round
    std::function<void(const RunEvent&)> event;      // what happened, as data (peers/run_events.h)
    RunStatus* status = nullptr;  // optional: the control API's view of the run, and its pause/leave commands
    // Membership while the run goes on: called from the event loop about once a second, returns the
    // keys taken off the allow-list since the last call; each is cut off (Host::revoke).
    std::function<std::vector<std::string>()> revoked;
    // What the run's deadlines, the islands' measured speeds and the round rows read the time from
    // (core/clock.h); a test passes a ManualClock. How long the host's own work took is always real.
    const Clock* clock = &Clock::real();
};

class Host {
public:
    explicit Host(HostOptions options);
    ~Host();

    // Runs until every round is done (then tells the peers goodbye) or stop() is called.
    void run(Link& link);
    void stop() { stop_ = true; }

    uint64_t round() const { return round_; }
    std::string theta_hash() const { return global_->hash(); }
    const diloco::GlobalModel& global() const { return *global_; }

private:
    void handle(Link& link, LinkEvent& e);  // may take the payload (a blob kept as it came)
    void on_hello(Link& link, const std::string& key, const protocol::Hello& h);
    // Bye "revoked", everything queued for it dropped, out of this round, its island index freed.
    void revoke(Link& link, const std::string& key);
    void on_pseudo_grad(Link& link, const std::string& key, std::span<const std::byte> blob, double transfer_seconds,
                        double since_begin_seconds);
    void on_moments(const std::string& key, std::vector<std::byte> blob);  // DES-LOC (moment_sync.h): kept as it came
    void note_update_held();  // a hash report in sync: logs when the last update has reached every island
    static uint64_t uplink_bytes(const Link& link);  // what the islands sent: pseudo-gradients and moments
    // Deadlines that scale with the link: a transfer with this peer moved payload within the margin,
    // and the one under way (bytes, of which `moved` arrived, first begun at `since`; none: 0) has
    // moved 100 kB/s over its life after the margin and is not older than its bytes at the link's
    // measured rate (at least 100 kB/s assumed), twice, plus the margin. A transfer just finished
    // counts: its answer is on the way.
    bool transfer_alive(const LinkStats& s, uint64_t bytes, uint64_t moved, double rate, Clock::time_point since) const;
    bool barrier_passed(Link& link) const;   // after an update: no island still receiving it or about to report
    bool sending_moves(Link& link, const std::string& key) const;  // what goes to `key` now is alive (transfer_alive)
    bool joiner_moving(Link& link) const;    // a newcomer's first state is on its way and moving
    // A report of θ at an earlier round that is the θ the host had then, with every update since
    // queued for it: the island is applying them (when updates come fast, the next one often lands
    // before its report).
    bool catching_up(const PeerState& p, const protocol::HashReport& h) const;
    bool gathered(Link& link, Clock::time_point join_deadline) const;  // the islands are here to open a round
    rounds::RunSnapshot view(Link& link);        // what the policy sees; valid until the next call
    void accept_blobs(Link& link);  // the pseudo-gradients' and moments' largest sizes
    void turn(Link& link, Clock::time_point join_deadline);  // one turn of the event loop
    // Polls the link once and handles what came; an exception on the way (bad_alloc included) is the
    // message's rejection, logged and an event, never the host's end.
    void take_message(Link& link, const std::function<void(LinkEvent&)>& handle_it);
    void drain(Link& link);        // the run's end: until the last update reached every island (or its deadline)
    void say_goodbye(Link& link);  // bye to every island, and the traffic by message type logged
    void start_round(Link& link);
    void start_island(Link& link, const rounds::Start& start);
    void start_islands(Link& link, const std::vector<rounds::Start>& starts);
    void offer_round(Link& link, const std::string& key);  // an island just got ready: the policy may start it
    void make_update(Link& link);            // the update the policy says is due: screen, aggregate, apply, send
    // The round's update, aggregated from `all` and applied to θ (fragment `fragment`'s): its bytes.
    // Throws arch::Error, changing nothing, when the aggregator refuses, the screen rejects every Δ or θ
    // would not stay finite.
    std::vector<std::byte> step(std::vector<rounds::Contribution>& all, int fragment, UpdateSeconds& seconds);
    // Held Δs screened on what the aggregation pass saw (the rejected taken out of all), then the step.
    std::vector<std::byte> aggregate_held(std::vector<rounds::Contribution>& all,
                                          std::vector<diloco::GlobalModel::HeldDelta>& held, int fragment,
                                          std::span<float> scratch);
    // The update's message: its meta, the encoded aggregate and, in a DES-LOC round, the moments' mean.
    SharedBlob encode_update(uint64_t ended, const std::vector<rounds::Contribution>& all,
                             std::vector<protocol::Applied> applied, float val, std::vector<std::byte> update);
    // A round's row is closed when its update is sent, and goes out (on_round, the event, the status)
    // once the evaluation of its θ is in, or unmeasured when that evaluation did not start or the next
    // update comes first.
    struct FinishedRound {
        RoundRow row;
        std::string theta;  // the θ hash's start after the round
        int fragment = -1;  // streaming: the fragment it updated
    };
    FinishedRound close_row(Link& link, uint64_t ended, std::size_t islands, double loss);
    void publish_row(Link& link, FinishedRound f);
    void publish_waiting_row(Link& link);
    void take_eval(Link& link);  // a finished evaluation: logged, and the row that waited for it out
    // The updates this run makes: run_updates(), or fewer when the privacy budget covers fewer.
    uint64_t last_update() const;
    void log_privacy_plan() const;
    void send_state(Link& link, const std::string& key);
    void serve_data(Link& link, const std::string& key, const protocol::DataRequest& request);
    void send_update(Link& link, const std::string& key, uint64_t round, const SharedBlob& blob);
    HostCheckpoints::Source checkpoint_source();  // what a checkpoint taken now holds
    void log(const std::string& line) const;
    void emit(const RunEvent& event) const;
    void publish(const std::string& key, uint64_t up = 0, uint64_t down = 0);  // PeerState -> options_.status
    void publish_run(Link& link);

    HostOptions options_;
    const Clock& clock_;  // *options_.clock
    ModelConfig model_config_;
    std::unique_ptr<diloco::GlobalModel> global_;
    std::unique_ptr<GlobalEval> eval_;            // the validation loss of θ, beside the rounds
    std::optional<FinishedRound> waiting_row_;    // the last round's row, until its val loss is in
    float last_val_ = -1;                         // the newest val loss (-1: none yet): updates carry it
    std::vector<std::string> shard_paths_;        // the training shards on the host's disk, manifest order
    DataManifest manifest_;                        // what peers are told of them: names, sizes, hashes
    std::vector<std::vector<DataChunk>> assignment_;  // each island's chunks
    static constexpr std::size_t kCatchUpUpdates = 3;  // updates a peer may have queued (NetLink::kMaxQueuedBlobs)
    RoundLedger ledger_{clock_, kCatchUpUpdates};  // rows, host seconds, recent θ hashes
    HostRoster roster_;                           // the peers, their islands and budgets
    StateShipping shipping_;                      // the state of θ for joiners
    std::vector<float> aggregate_;                // a round's aggregate (P): kept for the next round
    uint64_t round_ = 0;                          // the round in progress (or next to start)
    uint64_t first_round_ = 0;                    // the round this host started at: 0, or the checkpoint's
    std::unique_ptr<rounds::RoundPolicy> policy_;  // run.mode's: which islands start, what an update holds
    std::vector<rounds::IslandView> view_;        // the islands as view() last showed them to the policy
    std::unique_ptr<MomentPool> moments_;         // DES-LOC (outer.sync_moments_every > 0), else null
    std::unique_ptr<HostCheckpoints> checkpoints_;
    std::unique_ptr<privacy::PrivacyBudget> privacy_;  // [privacy] on, else null
    std::unique_ptr<HostDeltas> deltas_;               // the round's pseudo-gradients: taken in, vetted
    Clock::time_point sync_deadline_;  // after an update: start without islands silent by then
    Link* link_ = nullptr;                                  // during run(): what publish() reads the link figures from
    std::atomic<bool> stop_{false};
    Clock::time_point published_{};  // these two by the real clock: the event loop's own chores
    Clock::time_point revoked_checked_{};  // last call of options_.revoked
};

}  // namespace arch
