// peers/rounds/round_policy.h: the seam between the host's event loop and the rule of a run's rounds.
// The host (peers/host.cpp) admits islands, serves data and state, checks and decodes every
// pseudo-gradient, screens, aggregates and applies updates, checkpoints, and knows no round mode.
// A RoundPolicy decides the rest: which islands a round starts and with how many steps, what an
// arriving pseudo-gradient becomes, when an update is made and from which contributions. It never
// touches the network, θ or a clock: it gets a RunSnapshot and returns decisions the host carries out.
// One file per policy: sync_policy.h, async_policy.h, streaming_policy.h (one round per fragment),
// overlap_policy.h.
// Rules shared with bench_convergence: staleness.h, local_steps.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compression/held_payload.h"
#include "peers/rounds/auto_steps.h"
#include "peers/rounds/local_steps.h"
#include "peers/run_events.h"

namespace arch {
struct RunConfig;  // peers/run_config.h
}

namespace arch::rounds {

// One admitted island, as the host sees it when it calls the policy.
struct IslandView {
    std::string key;              // its authenticated public key: how the host and the policy name it
    uint32_t index = 0;           // its island index (its data, and its place in an update's order)
    std::string name;
    bool connected = false;
    bool ready = false;           // connected, welcomed, θ in sync with the host: it may be started
    bool busy = false;            // has a round_start it has not answered
    uint64_t started_round = 0;   // the round of its last round_start
    float steps_per_s = 0;        // measured by the host's clock (0: not yet)
    // Its seconds a step for H from the link: what it said of its own steps, never more than the
    // host's clock measured (which counts the update's way down too); 0: not measured yet.
    double step_s = 0;
    bool delta_moving = false;    // its pseudo-gradient is on the wire and moving (docs/net.md)
    uint64_t delta_bytes = 0;     // that transfer's size
    double delta_bytes_per_s = 0; // the link's measured rate from it (0: not measured yet)
};

// The run when the host calls the policy.
struct RunSnapshot {
    uint64_t round = 0;           // the round in progress or next to start; counts updates applied
    uint64_t rounds = 0;          // run.rounds: no island is started once round reaches it
    double seconds_open = 0;      // since the round was opened (a policy's deadline runs from there)
    // The last sync as the host measured it: from the begin of the last Δ an update used to that
    // update held by every island (its Δ up, the host's work, the update down); 0: none yet.
    double sync_s = 0;
    std::span<const IslandView> islands;  // every admitted island

    // The seconds of a step (IslandView::step_s) of the slowest ready island, and of the fastest
    // connected one; 0: none measured. An island that says it is faster than it is cannot cut H below
    // what the slowest honest one needs; one that is slower is held to the host's clock.
    double slowest_step_s() const {
        double s = 0;
        for (const IslandView& i : islands)
            if (i.ready && i.step_s > 0) s = std::max(s, i.step_s);
        return s;
    }
    double fastest_step_s() const {
        double s = 0;
        for (const IslandView& i : islands)
            if (i.connected && i.step_s > 0 && (s == 0 || i.step_s < s)) s = i.step_s;
        return s;
    }

    const IslandView* find(const std::string& key) const {
        for (const IslandView& i : islands)
            if (i.key == key) return &i;
        return nullptr;
    }
};

// A round_start the host sends: θ is always the host's current θ and round.
struct Start {
    std::string key;
    uint32_t steps = 0;            // inner steps (H, or H_i under Dynamic Local Updates)
    ScheduleSpan schedule;         // where those steps sit in the run's inner lr schedule
    // A Δ of this island the policy still holds for a later update (a folded straggler), by the
    // round it was started on: the island keeps its residual for it. Every other Δ it sent that no
    // update named is settled as dropped by this round_start (docs/rounds.md, "Error feedback").
    std::optional<uint64_t> held;
};

// A pseudo-gradient that passed the host's checks (the sender's role, the round it was started on,
// token weight, size, finite values), decoded.
struct Contribution {
    uint32_t island = 0;
    std::string key, name;
    uint64_t round = 0;           // the round the island was started on (θ it started from)
    std::vector<float> delta;     // decoded; empty when the host holds it encoded (below)
    double tokens = 0;            // its weight in the mean
    float loss = 0;               // its mean inner loss, for the round's row
    // A sync round's Δ as the host holds it: encoded, aggregated slice by slice (no policy reads it
    // whole), with its L2 norm for the screen (taken in the aggregation pass: HostDeltas::judge_held),
    // and the screen's clip (a factor applied as it is aggregated).
    std::shared_ptr<compression::HeldPayload> held;
    double norm = 0;
    float scale = 1.0f;
    // The per-value bound (peers/host_deltas.h): each value is clamped to ±limit (0: none), as it is
    // aggregated when held; `beyond` counts the values past it (a held Δ's, as it came, unclipped).
    float limit = 0.0f;
    uint64_t beyond = 0;
};

// What became of an arrival.
// What a policy tells the host beside what it returns: a sentence for the log, and the same as a run
// event (docs/events.md).
using Notes = std::function<void(const std::string& line, const RunEvent& event)>;

struct Arrival {
    std::string note;                // a line for the log (folded, downweighted, refused): empty for none
    RunEvent event;                  // the same as an event (kind "" with no note)
    std::optional<Start> restart;    // refused (nothing of it kept): start the island again from the current θ
};

class RoundPolicy {
public:
    virtual ~RoundPolicy() = default;

    // Whether a round is in progress. While none is, the host gathers islands (every admitted one in
    // sync, or the barrier after an update passed, or join_timeout_s) and then calls open_round.
    virtual bool open() const = 0;
    // Opens round run.round with the islands the host gathered: what to send, and how many islands
    // the round has (some may already be training it: a round started again after a refused update).
    struct Opening {
        std::vector<Start> starts;
        std::size_t islands = 0;
    };
    virtual Opening open_round(const RunSnapshot& run) = 0;
    // An island became ready (in sync again, or admitted in sync) while a round is open.
    virtual std::optional<Start> on_ready(const RunSnapshot& run, const IslandView& island) = 0;

    // A pseudo-gradient for `round` from an island started on that round, before it is decoded: throws
    // arch::Error with the reason if this policy cannot take it (another round, a second one).
    virtual void admit(const RunSnapshot& run, const IslandView& island, uint64_t round) const = 0;
    // The same, decoded and checked. The policy may scale its Δ (staleness), keep it for this round or
    // a later one, or refuse it.
    virtual Arrival on_arrival(const RunSnapshot& run, Contribution contribution) = 0;
    // An island left (disconnected, bye, or revoked: then what it sent that is not applied goes with
    // it). Returns whether the round in progress was waiting for it.
    virtual bool on_gone(const std::string& key, bool revoked) = 0;

    // Called on every turn of the host's loop while a round is open: whether an update is due now.
    // A policy may close a round that can never finish (every island left) and return false.
    virtual bool update_due(const RunSnapshot& run) = 0;
    // The contributions of the update that is due, in a canonical order (island, then round). The
    // host screens them and makes one outer step of what is left; the update names those it used.
    virtual std::vector<Contribution> take_update() = 0;
    // What came of that update: applied (run.round has moved on) or not (every Δ refused, an
    // aggregator that needs more, θ not finite: the round starts again). Returns the islands to start.
    virtual std::vector<Start> after_update(const RunSnapshot& run, bool applied) = 0;

    // H of the round in progress (async: of the island started last), and why: for the round's row.
    virtual ChosenSteps round_steps() const = 0;
};

// The policy for run.mode ("sync", "async", "streaming" or "overlap"; run_config.cpp checks the name).
std::unique_ptr<RoundPolicy> make_round_policy(const RunConfig& config, Notes notes);

}  // namespace arch::rounds
