// peers/host.h: the host of a DiLoCo run: admits peers (their keys are already on the allow-list;
// identity is the authenticated key), assigns each a stable island index (its data slice), runs
// the rounds (sync: wait for every island up to a deadline; async: apply each pseudo-gradient as it
// arrives with Delayed Nesterov and Dynamic Local Updates), aggregates through outer_optimizer,
// sends the update everyone applies, checks the islands' θ hashes, checkpoints every round, and
// brings late joiners and restarted peers up to date with the full state.
// Restart: a host started on the same checkpoint folder resumes from the last finished round.
#pragma once

#include <chrono>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/data_manifest.h"
#include "core/gpt2.h"
#include "outer_optimizer/screening.h"
#include "peers/diloco/global_model.h"
#include "peers/link.h"
#include "peers/rate_limit.h"
#include "peers/run_config.h"

namespace arch {

class RunStatus;  // peers/control/run_status.h

struct RoundRow {
    uint64_t round = 0;
    int islands = 0;
    float mean_inner_loss = 0;
    float val_loss = -1;
    uint64_t bytes_up = 0, bytes_down = 0;
    double compression_ratio = 0;  // fp32 size of the pseudo-gradients received / bytes received for them
    double seconds = 0;
};

struct HostOptions {
    RunConfig config;
    std::function<void(const std::string&)> log;     // one line per event
    std::function<void(const RoundRow&)> on_round;   // one call per finished round
    RunStatus* status = nullptr;  // optional: the control API's view of the run, and its pause/leave commands
    // Membership while the run goes on: called from the event loop about once a second, returns the
    // keys taken off the allow-list since the last call; each is cut off (Host::revoke).
    std::function<std::vector<std::string>()> revoked;
};

class Host {
    using Clock = std::chrono::steady_clock;

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
    struct PeerState {
        std::string name;
        uint32_t island = 0;
        bool connected = false;
        bool welcomed = false;
        bool in_sync = false;      // last reported hash equals the host's
        bool busy = false;         // has a round_start it has not answered yet
        uint64_t started_round = 0;  // the round of its last round_start: the only one it may answer
        std::chrono::steady_clock::time_point started_at{};  // when that round_start was sent
        uint32_t started_steps = 0;                           // and the H it asked for
        float steps_per_s = 0;     // measured by the host: H over the time from round_start to its Δ
        uint64_t last_round = 0;   // last round it contributed to
        TokenBucket hellos{1.0, 3};     // hellos a second (each may queue a welcome and the state)
        TokenBucket messages{10.0, 50};  // every other control message (an honest peer sends a few a round)
        uint64_t over_budget = 0;  // messages dropped for going over a budget
    };
    struct Contribution {
        uint32_t island;
        std::string name;  // the island's, for the log
        std::vector<float> delta;
        double tokens;
        float loss;
    };

    void handle(Link& link, const LinkEvent& e);
    void on_hello(Link& link, const std::string& key, const protocol::Hello& h);
    // Bye "revoked", everything queued for it dropped, out of this round, its island index freed.
    void revoke(Link& link, const std::string& key);
    void on_pseudo_grad(Link& link, const std::string& key, std::span<const std::byte> blob, double transfer_seconds);
    // Deadlines that scale with the link: a transfer with this peer moved within the margin, and the
    // one under way (bytes, begun at `since`; none: 0) is not older than its bytes at the link's
    // measured rate (at least 100 kB/s assumed), twice, plus the margin. A transfer just finished
    // counts: its answer is on the way.
    bool transfer_alive(const LinkStats& s, uint64_t bytes, double rate, Clock::time_point since) const;
    bool round_deadline_passed(Link& link);  // sync: round_timeout_s after round_start, and no Δ still moving
    bool barrier_passed(Link& link) const;   // after an update: no island still receiving it or about to report
    void start_round(Link& link);
    void start_island(Link& link, const std::string& key);
    void finish_round(Link& link);
    void screen(std::vector<Contribution>& all);  // clips or drops Δs far above the median norm, logged by name
    void send_state(Link& link, const std::string& key);
    void serve_data(Link& link, const std::string& key, const protocol::DataRequest& request);
    void send_update(Link& link, const std::string& key, uint64_t round, const SharedBlob& blob);
    bool within_budget(const LinkEvent& e);  // hello and message budgets; logs what goes over
    uint32_t steps_for(const std::string& key) const;
    bool round_complete() const;
    void save_checkpoint();
    bool try_save_checkpoint();  // logs a failure (full disk, read-only folder) and returns false
    bool load_checkpoint();
    float evaluate();
    void log(const std::string& line) const;
    void publish(const std::string& key, uint64_t up = 0, uint64_t down = 0);  // PeerState -> options_.status
    void publish_run(Link& link);

    HostOptions options_;
    ModelConfig model_config_;
    std::unique_ptr<diloco::GlobalModel> global_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<GPT2> eval_model_;
    std::string val_pattern_;
    std::vector<std::string> shard_paths_;        // the training shards on the host's disk, manifest order
    DataManifest manifest_;                        // what peers are told of them: names, sizes, hashes
    std::vector<std::vector<DataChunk>> assignment_;  // each island's chunks
    std::map<std::string, PeerState> peers_;      // by key
    SharedBlob state_blob_;                       // the one copy of the state every peer that needs it gets
    std::string state_blob_of_;                   // the θ hash it was made from
    std::set<std::string> awaiting_state_;        // peers it was sent to that have not reported in sync
    std::map<std::string, uint32_t> island_of_;   // stable key -> island index, saved with the checkpoint
    uint64_t round_ = 0;                          // the round in progress (or next to start)
    bool round_open_ = false;
    std::map<std::string, bool> expected_;        // sync: islands this round waits for (key -> delivered)
    std::vector<Contribution> contributions_;
    std::vector<Contribution> folded_;            // straggler = fold: late pseudo-gradients for the next round
    std::unique_ptr<outer::NormScreen> screen_;   // outer.screen: Δ norms against the round's median
    std::chrono::steady_clock::time_point round_started_;
    std::chrono::steady_clock::time_point sync_deadline_;  // after an update: start without islands silent by then
    bool deadline_logged_ = false;                          // "waiting for a Δ still moving" said once a round
    Link* link_ = nullptr;                                  // during run(): what publish() reads the link figures from
    uint64_t bytes_up_mark_ = 0;
    uint64_t down_bytes_round_ = 0;
    double raw_bytes_round_ = 0;
    std::atomic<bool> stop_{false};
    std::chrono::steady_clock::time_point published_{};
    std::chrono::steady_clock::time_point revoked_checked_{};  // last call of options_.revoked
};

}  // namespace arch
