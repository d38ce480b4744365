// peers/control/run_status.h: what a running host or peer shows through the control API: a
// thread-safe snapshot (one mutex) that the Host and Peer loops update through small hooks, plus the
// commands the API sends back (pause, leave). Header-only so peers/host.cpp and peers/peer.cpp need
// no link dependency on the control library. It never touches the run's state: it only copies.
// It also carries the run's events (peers/run_events.h) to the sink the command set (--events FILE).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/clock.h"
#include "peers/host.h"
#include "peers/protocol.h"
#include "peers/run_events.h"
#include "privacy/privacy_budget.h"

namespace arch {

struct PeerRow {
    std::string name;
    std::string fingerprint;  // net::fingerprint of its public key
    uint32_t island = 0;
    uint32_t devices = 1;
    double steps_per_s = 0;
    int64_t last_round = -1;  // last round it contributed to (-1: none yet)
    uint64_t bytes_up = 0, bytes_down = 0;
    bool connected = false;
    bool in_sync = false;
    // Measured by the host, by its own clock (docs/net.md, "Time that scales with the link").
    double seconds_per_step = 0;                     // its inner step: round_start to Δ, less the Δ's transfer
    double up_bytes_per_s = 0, down_bytes_per_s = 0;  // its link: blobs from it, blobs to it
    uint64_t wire_bytes_sent = 0, wire_bytes_received = 0;  // every frame to / from it
    // Its last round, from its Δ before to its last Δ: its inner steps, the rest (link and waiting), and
    // the share of the round it computed (0: fewer than two Δs since it said hello).
    double compute_s_per_round = 0, communication_s_per_round = 0, utilisation = 0;
    // Its connection as the host's kernel sees it: the peer's address, and the host's own address it
    // came in on ("ip:port", IPv6 in brackets; empty until it speaks).
    std::string came_from, came_in_on;
};

// Island-level differential privacy (docs/privacy.md): mode "off", or what the run's budget allows and
// what its updates so far have spent.
struct PrivacyFigures {
    std::string mode = "off";
    double clip = 0, noise_multiplier = 0, delta = 0;
    double epsilon_budget = 0, epsilon_spent = 0;
    int honest = 0;  // distributed mode
    uint64_t updates_affordable = 0;  // the updates the budget covers
    static PrivacyFigures of(const privacy::PrivacyBudget& b, uint64_t updates) {
        const privacy::DpSettings& d = b.settings();
        return {d.mode, d.clip, b.noise_multiplier(), d.delta, d.epsilon, b.spent(updates), d.honest, b.affordable()};
    }
};

struct StatusSnapshot {
    std::string role = "idle";  // idle | host | peer
    std::string run;
    std::string state = "waiting";  // waiting | training | paused | finished | stopped | failed
    uint64_t round = 0;
    int rounds = 0;
    std::string mode = "sync";
    int islands = 0;
    std::string theta_hash;
    bool paused = false;
    double tokens_per_s = 0;
    double uptime_s = 0;
    float inner_loss = -1, val_loss = -1;  // latest; -1 unknown
    double compression_ratio = 0;
    uint64_t rounds_finished = 0;
    uint32_t steps_per_round = 0;  // H of the round in progress (host) or the last one trained (peer)
    std::string steps_why;          // why that H (inner.steps_per_round, or what H from the link came from)
    // A host's port mapping on its router (net/port_mapping.h): the state's name, the address peers
    // outside its network reach it at (when mapped), and the whole story with what to do.
    std::string reachability = "off";
    std::string external_endpoint;
    std::string reachability_detail;
    PrivacyFigures privacy;
    std::vector<PeerRow> peers;
    std::vector<RoundRow> history;
    std::map<protocol::Type, uint64_t> bytes_sent, bytes_received;
};

class RunStatus {
public:
    static constexpr std::size_t kLogLines = 500;

    RunStatus() : started_(Clock::real().now()) {}

    // A new run: clears peers, history and traffic (the log tail, uptime and commands stay).
    void begin(const std::string& role, const std::string& run, int rounds, const std::string& mode, int islands) {
        std::lock_guard lock(mu_);
        StatusSnapshot fresh;
        fresh.role = role;
        fresh.run = run;
        fresh.rounds = rounds;
        fresh.mode = mode;
        fresh.islands = islands;
        s_ = std::move(fresh);
        peers_.clear();
    }
    void clear_commands() {
        paused_ = false;
        leave_ = false;
    }
    void set_run(const std::string& run, int rounds, const std::string& mode, int islands) {
        with([&](StatusSnapshot& s) {
            s.run = run;
            s.rounds = rounds;
            s.mode = mode;
            s.islands = islands;
        });
    }
    void set_state(const std::string& state) { with([&](StatusSnapshot& s) { s.state = state; }); }
    void set_round(uint64_t round, const std::string& theta_hash) {
        with([&](StatusSnapshot& s) {
            s.round = round;
            s.theta_hash = theta_hash;
        });
    }
    void set_tokens_per_s(double v) { with([&](StatusSnapshot& s) { s.tokens_per_s = v; }); }
    void set_privacy(const PrivacyFigures& p) { with([&](StatusSnapshot& s) { s.privacy = p; }); }
    void set_inner_loss(float v) { with([&](StatusSnapshot& s) { s.inner_loss = v; }); }
    void set_steps(uint32_t steps, const std::string& why) {
        with([&](StatusSnapshot& s) {
            s.steps_per_round = steps;
            s.steps_why = why;
        });
    }
    void set_reachability(const std::string& state, const std::string& endpoint, const std::string& detail) {
        with([&](StatusSnapshot& s) {
            s.reachability = state;
            s.external_endpoint = endpoint;
            s.reachability_detail = detail;
        });
    }
    // A finished round (host) or an applied one (peer; only round, islands and val loss known).
    void add_round(const RoundRow& row) {
        with([&](StatusSnapshot& s) {
            s.history.push_back(row);
            ++s.rounds_finished;
            if (row.mean_inner_loss > 0) s.inner_loss = row.mean_inner_loss;
            s.val_loss = row.val_loss;
            if (row.compression_ratio > 0) s.compression_ratio = row.compression_ratio;
        });
    }
    // Peers by key: the caller edits the row in place under the lock.
    template <class F>
    void peer(const std::string& key, F&& edit) {
        std::lock_guard lock(mu_);
        edit(peers_[key]);
    }
    void traffic(const Link& link) {
        std::lock_guard lock(mu_);
        for (protocol::Type t : kTypes) {
            s_.bytes_sent[t] = link.bytes_sent(t);
            s_.bytes_received[t] = link.bytes_received(t);
        }
    }
    // Where the run's events go (none: dropped); set once, before a session starts.
    void set_event_sink(std::function<void(const RunEvent&)> sink) { event_sink_ = std::move(sink); }
    void event(const RunEvent& e) const {
        if (event_sink_) event_sink_(e);
    }
    void log(const std::string& line) {
        std::lock_guard lock(mu_);
        log_.push_back(line);
        while (log_.size() > kLogLines) log_.pop_front();
    }

    StatusSnapshot snapshot() const {
        std::lock_guard lock(mu_);
        StatusSnapshot s = s_;
        for (const auto& [key, row] : peers_) s.peers.push_back(row);
        s.paused = paused_;
        if (paused_ && (s.state == "training" || s.state == "waiting")) s.state = "paused";
        s.uptime_s = std::chrono::duration<double>(Clock::real().now() - started_).count();
        return s;
    }
    std::vector<std::string> log_tail(std::size_t n) const {
        std::lock_guard lock(mu_);
        const std::size_t from = log_.size() > n ? log_.size() - n : 0;
        return std::vector<std::string>(log_.begin() + static_cast<std::ptrdiff_t>(from), log_.end());
    }

    // Commands from the API, read by the Host and Peer loops.
    void set_paused(bool p) { paused_ = p; }
    bool paused() const { return paused_; }
    void request_leave() { leave_ = true; }
    bool leave_requested() const { return leave_; }

    static constexpr protocol::Type kTypes[] = {protocol::Type::hello,       protocol::Type::welcome,
                                                protocol::Type::reject,      protocol::Type::round_start,
                                                protocol::Type::pseudo_grad, protocol::Type::update,
                                                protocol::Type::hash_report, protocol::Type::state,
                                                protocol::Type::bye};

private:
    template <class F>
    void with(F&& f) {
        std::lock_guard lock(mu_);
        f(s_);
    }

    mutable std::mutex mu_;
    StatusSnapshot s_;
    std::map<std::string, PeerRow> peers_;
    std::deque<std::string> log_;
    std::function<void(const RunEvent&)> event_sink_;
    Clock::time_point started_;
    std::atomic<bool> paused_{false}, leave_{false};
};

}  // namespace arch
