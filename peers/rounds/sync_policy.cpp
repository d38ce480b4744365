// peers/rounds/sync_policy.cpp: SyncPolicy.
#include "peers/rounds/sync_policy.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace arch::rounds {

SyncPolicy::SyncPolicy(uint32_t steps_per_round, double round_timeout_s, bool fold, Notes notes)
    : H_(steps_per_round), chosen_{steps_per_round, "inner.steps_per_round"}, round_timeout_s_(round_timeout_s), fold_(fold),
      notes_(std::move(notes)) {}

Start SyncPolicy::start(const RunSnapshot& run, const std::string& key) const {
    Start s;
    s.key = key;
    s.steps = chosen_.steps;
    s.schedule = schedule_span(run.round, 1, run.rounds, H_);
    for (const Contribution& f : folded_)
        if (f.key == key) s.held = f.round;
    return s;
}

RoundPolicy::Opening SyncPolicy::open_round(const RunSnapshot& run) {
    open_ = true;
    if (auto_) chosen_ = choose_steps(*auto_, run.slowest_step_s(), run.sync_s, overlapped());
    contributions_.clear();
    expected_.clear();
    deadline_logged_ = false;
    Opening o;
    for (const IslandView& i : run.islands) {
        if (!i.ready) continue;
        expected_[i.key] = false;
        // A round started again (its update was refused) does not restart an island still training it.
        if (!(i.busy && i.started_round == run.round)) o.starts.push_back(start(run, i.key));
    }
    o.islands = expected_.size();
    return o;
}

std::optional<Start> SyncPolicy::on_ready(const RunSnapshot& run, const IslandView& island) {
    const auto it = expected_.find(island.key);
    if (!open_ || island.busy || it == expected_.end() || it->second) return std::nullopt;
    return start(run, island.key);
}

void SyncPolicy::admit(const RunSnapshot& run, const IslandView& island, uint64_t round) const {
    const bool current = open_ && round == run.round;
    const bool late = fold_ && round + 1 == run.round;
    if (!current && !late)
        throw Error("pseudo-gradient for round " + std::to_string(round) + " while round " + std::to_string(run.round) +
                    (open_ ? " is open" : " has not started"));
    if (current) {
        const auto it = expected_.find(island.key);
        if (it == expected_.end() || it->second)
            throw Error(it != expected_.end() ? "a second pseudo-gradient for this round" : "an island that is not in this round");
    }
}

Arrival SyncPolicy::on_arrival(const RunSnapshot& run, Contribution c) {
    admit(run, IslandView{c.key, c.island, c.name}, c.round);
    Arrival a;
    if (c.round + 1 == run.round) {
        a.note = "folded a late pseudo-gradient of island " + std::to_string(c.island) + " into round " + std::to_string(run.round);
        a.event = {.kind = "folded", .round = static_cast<int64_t>(run.round), .island = static_cast<int>(c.island), .peer = c.name};
        folded_.push_back(std::move(c));
        return a;
    }
    expected_[c.key] = true;
    contributions_.push_back(std::move(c));
    return a;
}

bool SyncPolicy::on_gone(const std::string& key, bool revoked) {
    if (revoked) {
        std::erase_if(contributions_, [&](const Contribution& c) { return c.key == key; });
        std::erase_if(folded_, [&](const Contribution& c) { return c.key == key; });
    }
    const auto it = expected_.find(key);
    if (it == expected_.end()) return false;
    const bool waited = !it->second;
    if (waited || revoked) expected_.erase(it);
    return waited;
}

bool SyncPolicy::complete() const {
    if (expected_.empty()) return false;
    return std::all_of(expected_.begin(), expected_.end(), [](const auto& kv) { return kv.second; });
}

bool SyncPolicy::deadline_passed(const RunSnapshot& run) {
    if (run.seconds_open <= round_timeout_s_) return false;
    // A pseudo-gradient still on its way keeps the round open: the link is slow, not the island.
    for (const auto& [key, delivered] : expected_) {
        if (delivered) continue;
        const IslandView* i = run.find(key);
        if (!i || !i->delta_moving) continue;
        if (!deadline_logged_) {
            char rate[48] = "not measured yet";
            if (i->delta_bytes_per_s > 0) std::snprintf(rate, sizeof(rate), "%.2f MB/s", i->delta_bytes_per_s / 1e6);
            notes_("round " + std::to_string(run.round) + ": past its deadline, but the pseudo-gradient of " + i->name +
                       " (" + std::to_string(i->delta_bytes) + " bytes) is still moving (link " + rate + "); waiting for it",
                   {.kind = "deadline_waits", .round = static_cast<int64_t>(run.round), .peer = i->name,
                    .bytes = static_cast<int64_t>(i->delta_bytes)});
            deadline_logged_ = true;
        }
        return false;
    }
    return true;
}

bool SyncPolicy::update_due(const RunSnapshot& run) {
    if (!open_) return false;
    if (complete()) return true;
    if (deadline_passed(run)) {
        notes_("round " + std::to_string(run.round) + " deadline passed (" + std::to_string(static_cast<int>(run.seconds_open)) +
                   " s after its start); closing it with " + std::to_string(contributions_.size()) + " islands",
               {.kind = "deadline_passed", .round = static_cast<int64_t>(run.round), .islands = static_cast<int>(contributions_.size())});
        return true;
    }
    if (expected_.empty()) {
        if (!contributions_.empty()) return true;  // the others left: close with what arrived
        open_ = false;                             // everyone left: the host gathers islands again
    }
    return false;
}

std::vector<Contribution> SyncPolicy::take_update() {
    std::vector<Contribution> all = std::move(contributions_);
    for (Contribution& f : folded_) all.push_back(std::move(f));
    folded_.clear();
    contributions_.clear();
    std::sort(all.begin(), all.end(), [](const Contribution& a, const Contribution& b) {
        return a.island != b.island ? a.island < b.island : a.round < b.round;
    });
    return all;
}

std::vector<Start> SyncPolicy::after_update(const RunSnapshot&, bool) {
    open_ = false;  // applied or not, the next round (or this one again) opens when the host has gathered
    return {};
}

}  // namespace arch::rounds
