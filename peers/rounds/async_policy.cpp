// peers/rounds/async_policy.cpp: AsyncPolicy.
#include "peers/rounds/async_policy.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "core/error.h"

namespace arch::rounds {

AsyncPolicy::AsyncPolicy(uint32_t steps_per_round, StalenessRule staleness)
    : H_(steps_per_round), chosen_{steps_per_round, "inner.steps_per_round"}, staleness_(staleness) {}

Start AsyncPolicy::start(const RunSnapshot& run, const std::string& key) {
    float fastest = 0;  // among the islands here now, by the host's own clock
    uint64_t here = 0;  // islands training in this run now: the updates until this island's Δ lands
    const IslandView* me = nullptr;
    for (const IslandView& i : run.islands) {
        if (!i.connected) continue;
        fastest = std::max(fastest, i.steps_per_s);
        here += (i.ready || i.busy || i.key == key) ? 1 : 0;
        if (i.key == key) me = &i;
    }
    if (auto_) chosen_ = choose_steps(*auto_, run.fastest_step_s(), run.sync_s, false);
    Start s;
    s.key = key;
    s.steps = local_steps(chosen_.steps, me ? me->steps_per_s : 0.0, fastest);
    s.schedule = schedule_span(run.round, here, run.rounds, H_);
    return s;
}

RoundPolicy::Opening AsyncPolicy::open_round(const RunSnapshot& run) {
    open_ = true;
    Opening o;
    for (const IslandView& i : run.islands) {
        if (!i.ready) continue;
        ++o.islands;
        if (!i.busy) o.starts.push_back(start(run, i.key));
    }
    return o;
}

std::optional<Start> AsyncPolicy::on_ready(const RunSnapshot& run, const IslandView& island) {
    if (!open_ || island.busy) return std::nullopt;
    return start(run, island.key);
}

void AsyncPolicy::admit(const RunSnapshot& run, const IslandView&, uint64_t round) const {
    // The host has checked that it is the round this island was last started on, and only once.
    if (round > run.round)
        throw Error("pseudo-gradient for round " + std::to_string(round) + ", ahead of the host's " + std::to_string(run.round));
}

Arrival AsyncPolicy::on_arrival(const RunSnapshot& run, Contribution c) {
    admit(run, IslandView{}, c.round);
    const uint64_t staleness = run.round - c.round;
    const StaleVerdict v = judge_staleness(staleness, staleness_);
    Arrival a;
    const std::string who = "island " + std::to_string(c.island) + " (" + c.name + ")";
    if (v.refused) {
        a.note = "refused the pseudo-gradient of " + who + " from round " + std::to_string(c.round) + ": " +
                 std::to_string(staleness) + " updates stale (async.max_staleness = " +
                 std::to_string(staleness_.max_staleness) + "); it starts again from round " + std::to_string(run.round);
        a.event = {.kind = "stale", .round = static_cast<int64_t>(c.round), .island = static_cast<int>(c.island), .peer = c.name,
                   .type = "refused", .stale = static_cast<int64_t>(staleness)};
        a.restart = start(run, c.key);
        return a;
    }
    if (v.scale != 1.0f) {
        for (float& x : c.delta) x *= v.scale;
        char scale[32];
        std::snprintf(scale, sizeof(scale), "%.4g", static_cast<double>(v.scale));
        a.note = "downweighted the pseudo-gradient of " + who + " from round " + std::to_string(c.round) + ": " +
                 std::to_string(staleness) + " updates stale (async.max_staleness = " +
                 std::to_string(staleness_.max_staleness) + "), scaled by " + scale;
        a.event = {.kind = "stale", .round = static_cast<int64_t>(c.round), .island = static_cast<int>(c.island), .peer = c.name,
                   .type = "downweighted", .stale = static_cast<int64_t>(staleness), .scale = v.scale};
    }
    waiting_.push_back(std::move(c));
    return a;
}

bool AsyncPolicy::on_gone(const std::string& key, bool revoked) {
    if (revoked) std::erase_if(waiting_, [&](const Contribution& c) { return c.key == key; });
    return false;  // no round waits for anyone
}

bool AsyncPolicy::update_due(const RunSnapshot&) { return open_ && !waiting_.empty(); }

std::vector<Contribution> AsyncPolicy::take_update() {
    std::vector<Contribution> one;
    in_update_.clear();
    if (waiting_.empty()) return one;
    in_update_.push_back(waiting_.front().key);
    one.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    return one;
}

std::vector<Start> AsyncPolicy::after_update(const RunSnapshot& run, bool) {
    // Applied or not, the island that sent it starts again from the host's θ now.
    std::vector<Start> starts;
    for (const std::string& key : std::exchange(in_update_, {})) {
        const IslandView* i = run.find(key);
        if (i && i->connected && !i->busy) starts.push_back(start(run, key));
    }
    return starts;
}

}  // namespace arch::rounds
