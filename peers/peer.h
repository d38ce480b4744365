// peers/peer.h: the peer daemon's island: says hello to the host, receives the run config and its
// island's data assignment (found in the user's --data folders by hash, or fetched from the host
// into the working directory: peers/island_data.h), keeps a replica of the global state, runs each round's inner steps
// on its own data, sends the encoded pseudo-gradient, applies every update in order and reports
// its θ hash. Its error-feedback residual follows what the host applied: a Δ that no update used
// is undone (docs/rounds.md). It survives host trouble: after a reconnect or a "say hello first" it
// says hello again with its round and hash, and the host resends the state if they differ.
// With DES-LOC on (outer.sync_moments_every) it sends its AdamW moments before the Δ of every K-th
// round, and takes the mean the update carries if the host used them (peers/moment_sync.h).
// How its island trains across rounds is run.mode's (peers/diloco/round_island.h): in streaming and
// overlap mode it trains on after each send, and between those steps it polls the link, so the Δ and
// the update move while it trains.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/island_worker.h"
#include "peers/diloco/round_island.h"
#include "peers/island_data.h"
#include "peers/link.h"
#include "peers/run_config.h"
#include "peers/run_events.h"

namespace arch {

class RunStatus;  // peers/control/run_status.h

// What happened to the island's error-feedback residual (codecs with +ef), for PeerOptions::on_residual.
enum class ResidualEvent {
    encoding,  // the residual a round's Δ is about to be encoded on
    dropped,   // the host did not apply that round's Δ: the residual keeps what its rounding left
    reset,     // dropped: the island got the full state
};

struct PeerOptions {
    std::string name = "peer";
    double throttle = 1.0;  // < 1 makes the island artificially slower (0.5: half speed)
    int devices = 1;        // this island's devices (CPU threads here), trained together every step
    Parallel parallel = Parallel::ddp;
    std::string device = "cpu";  // "cpu" or "cuda[:N]" (the first GPU of the island)
    diloco::DeviceOptions device_options;  // recompute, offload (GPUs)
    std::function<void(const std::string&)> log;
    std::function<void(const RunEvent&)> event;  // what happened, as data (peers/run_events.h)
    RunStatus* status = nullptr;  // optional: the control API's view of this island, and its pause/leave commands
    std::string workdir;          // everything this peer writes: fetched data, the island's shard
    std::vector<std::string> data_dirs;  // the user's own copies of data sets, matched by hash (--data)
    bool state_on_disk = false;  // θ's replica and the error-feedback residual in memory-mapped files in workdir (core/float_store.h)
    // The largest model a welcome may ask for; 0: one fp32 copy of it must fit this machine's RAM. A
    // welcome beyond it ends the peer with its reason, before anything is allocated.
    uint64_t max_params = 0;
    // Optional, for tests and diagnostics: called from run()'s thread at each ResidualEvent, with the
    // round it concerns and the residual as it is then (empty: none yet).
    std::function<void(ResidualEvent, uint64_t round, std::span<const float> residual)> on_residual;
};

class Peer {
public:
    explicit Peer(PeerOptions options);
    ~Peer();

    // Runs until the host says the run is finished (returns true) or stop() (returns false).
    bool run(Link& link, const std::string& host_key);
    void stop() { stop_ = true; }

    std::optional<std::string> theta_hash() const;
    uint64_t round() const { return round_; }

private:
    void hello(Link& link);
    void on_welcome(Link& link, const protocol::Welcome& w);
    void accept_blobs(Link& link) const;  // after a welcome: the blobs this run's messages can be, and their sizes
    void on_data(Link& link, std::span<const std::byte> blob);
    void request_data(Link& link);
    void data_ready(Link& link);  // the island's shard is complete: start the island, report θ
    void on_message(Link& link, LinkEvent& e);  // one message from the host, by its type (a state is taken from e)
    void on_state(Link& link, std::vector<std::byte> blob);
    // True: applied, and it carried no moments (Link::give_back may have its memory).
    bool on_update(Link& link, std::span<const std::byte> blob);
    void on_round_start(Link& link, const protocol::RoundStart& m);
    void send_moments(Link& link, uint64_t round);  // DES-LOC: the island's AdamW m and v, before its Δ
    void take_moments(const protocol::UpdateMeta& meta, const std::optional<protocol::MomentsView>& mean);  // borrowed from the update
    void overlap_turn(Link& link);  // between rounds: a due merge, one step trained on, or a round_start that waited
    void settle_dropped(std::optional<uint64_t> held);  // every Δ no update named, except the one held
    // An inner step of `seconds` just ended (a --throttle sleeps as if it were longer, and counts it):
    // the island's utilisation and its own step time.
    void stepped(double seconds);
    void residual_event(ResidualEvent what, uint64_t round);
    void report_hash(Link& link);
    void log(const std::string& line) const;
    void emit(const RunEvent& event) const;
    std::string state_path(const std::string& name) const;  // in workdir (--state-on-disk)
    void publish(Link& link);  // round, θ, traffic -> options_.status

    PeerOptions options_;
    std::string host_;
    std::optional<RunConfig> config_;
    std::unique_ptr<privacy::PrivacyBudget> privacy_;  // the run's [privacy], when on
    uint32_t island_ = 0;
    std::unique_ptr<IslandData> data_;  // this island's data until its shard is complete
    ModelConfig model_{};
    Clock::time_point data_started_{};
    uint64_t data_fetched_ = 0;  // bytes of tokens fetched from the host in this session
    bool data_requested_ = false;  // a data_request is out and not answered yet
    std::unique_ptr<diloco::IslandWorker> worker_;
    std::unique_ptr<diloco::RoundIsland> rounds_;  // how worker_ trains across rounds: run.mode's
    std::optional<protocol::RoundStart> waiting_start_;  // a round_start that came while the island was busy
    std::unique_ptr<diloco::GlobalModel> replica_;
    bool replica_valid_ = false;
    uint64_t round_ = 0;  // the round replica_'s θ belongs to
    float steps_per_s_ = 0;
    double compute_s_ = 0;                    // the inner steps of the last round this island trained
    Clock::time_point sent_at_{};  // when its Δ was handed to the link
    // When it last told the host where it stands (the welcome to its hello, or a hash report): the time
    // of a state that follows runs from it.
    Clock::time_point reported_at_{};
    std::optional<Clock::time_point> last_step_at_;  // the end of its last inner step
    // Its utilisation: seconds in inner steps (overlapped ones too), and since the first one began.
    double busy_s_ = 0;
    std::optional<Clock::time_point> first_step_at_;
    double round_busy_s_ = 0;  // the same since its last send, and the steps in it: its step time
    int round_steps_ = 0;
    std::optional<uint64_t> timed_round_;     // that round
    std::atomic<bool> stop_{false};
    bool finished_ = false;
    std::optional<protocol::RoundStart> deferred_;  // a round_start that came while paused
};

}  // namespace arch
