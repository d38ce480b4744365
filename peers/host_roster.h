// peers/host_roster.h: the peers a host knows and the admission's bookkeeping. Each key's PeerState
// (as the host sees it: connected, welcomed, in sync, the round it was started on, its measured speed),
// the stable key -> island index map that the checkpoint saves (an index freed by a revocation goes to
// the next newcomer), and the budgets that bound what a stranger costs: a bounded number of keys not
// admitted yet, and hellos and other messages rate-limited per key.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "core/clock.h"
#include "peers/link.h"
#include "peers/rate_limit.h"
#include "peers/run_events.h"

namespace arch {

struct PeerState {
    std::string name;
    uint32_t island = 0;
    bool connected = false;
    bool welcomed = false;
    bool in_sync = false;        // last reported hash equals the host's
    bool busy = false;           // has a round_start it has not answered yet
    uint64_t started_round = 0;  // the round of its last round_start: the only one it may answer
    Clock::time_point started_at{};  // when that round_start was sent
    uint32_t started_steps = 0;      // and the inner steps it asked for
    float steps_per_s = 0;           // measured by the host: H over the time from round_start to its Δ
    float reported_steps_per_s = 0;  // what its last Δ said of its own speed (H from the link only)
    // Its own rounds, by the host's clock, from one Δ of it to its next (docs/net.md, "Time that scales
    // with the link"): the seconds of its inner steps in the last one, and the whole round (0: not yet).
    Clock::time_point last_delta_at{};  // its last Δ's arrival (unset after a hello: a rejoin starts afresh)
    double round_compute_s = 0, round_wall_s = 0;
    uint64_t last_round = 0;         // last round it contributed to
    uint64_t queued_from = UINT64_MAX;  // every update since this round is queued for it (after a state or an in-sync hello)
    TokenBucket hellos{1.0, 3};      // hellos a second (each may queue a welcome and the state)
    TokenBucket messages{10.0, 50};  // every other control message (an honest peer sends a few a round)
    TokenBucket transfers{20.0, 100};  // transfer-begins and refused transfer messages (an honest peer: a begin a round)
    uint64_t over_budget = 0;        // messages dropped for going over a budget
    bool awaited = false;  // it was in sync when the last update went to it: the barrier waits for its report
    bool joining = false;  // a key's first admission in this host's life, taking its first state
    bool seat_unsaved = false;  // a newcomer's island, checkpointed once it is in sync (Host::on_hello)
    // An island the last update was meant for that has not reported it: the barrier waits for it.
    bool waits() const { return connected && welcomed && !in_sync && awaited; }
    // A newcomer taking its first state: waited for only while that state moves (Host::joiner_moving),
    // once. Any other island out of sync (a joiner again, one catching up or astray) joins a round once
    // it reports in sync and holds nothing back until then: a peer that never gets there cannot hold
    // the run back.
    bool joins() const { return connected && welcomed && !in_sync && joining; }
};

class HostRoster {
public:
    // `islands`: the run's island count; `log` gets a line per thousand messages dropped from a key.
    HostRoster(int islands, const Clock& clock, std::function<void(const std::string&)> log,
               std::function<void(const RunEvent&)> event);

    // Whether e is within its sender's budget (a key not seen yet gets a PeerState, while fewer than
    // 4 per island + 16 are known); false: drop it.
    bool within_budget(const LinkEvent& e);
    // The same for a transfer message the link charges (Link::charge_transfers).
    bool transfer_within_budget(const std::string& key);
    // The island index of `key`: its own, or for a newcomer the lowest free one; none when the run is full.
    struct Seat {
        uint32_t island = 0;
        bool newcomer = false;  // the island map changed
    };
    std::optional<Seat> seat(const std::string& key);
    std::optional<uint32_t> release(const std::string& key);  // its island index, freed; none: it had none

    PeerState* find(const std::string& key);
    PeerState& operator[](const std::string& key) { return peers_[key]; }
    std::map<std::string, PeerState>& peers() { return peers_; }
    const std::map<std::string, PeerState>& peers() const { return peers_; }
    const std::map<std::string, uint32_t>& islands() const { return island_of_; }
    void restore(std::map<std::string, uint32_t> islands) { island_of_ = std::move(islands); }
    std::string who(const std::string& key) const;  // its name, or the start of its key before a hello

    bool every_island_in_sync() const;  // no connected, welcomed island waits for the update
    int ready() const;                  // and in sync

private:
    // Takes a token from `key`'s `budget`; over it, logs one line in a thousand and says false.
    bool charge(const std::string& key, TokenBucket PeerState::*budget, const std::string& what);

    int islands_;
    const Clock& clock_;
    std::function<void(const std::string&)> log_;
    std::function<void(const RunEvent&)> event_;  // over_budget
    std::map<std::string, PeerState> peers_;      // by key
    std::map<std::string, uint32_t> island_of_;   // stable key -> island index, saved with the checkpoint
};

std::string short_key(const std::string& key);  // its hex fingerprint (net::fingerprint), as `archipelago status` shows it

}  // namespace arch
