// peers/host_roster.cpp: HostRoster.
#include "peers/host_roster.h"

#include <algorithm>

#include "net/keys.h"

namespace arch {

std::string short_key(const std::string& key) { return net::fingerprint(key); }

HostRoster::HostRoster(int islands, const Clock& clock, std::function<void(const std::string&)> log,
                       std::function<void(const RunEvent&)> event)
    : islands_(islands), clock_(clock), log_(std::move(log)), event_(std::move(event)) {}

bool HostRoster::within_budget(const LinkEvent& e) {
    return charge(e.peer, e.type == protocol::Type::hello ? &PeerState::hellos : &PeerState::messages,
                  protocol::type_name(e.type));
}

bool HostRoster::transfer_within_budget(const std::string& key) {
    return charge(key, &PeerState::transfers, "transfer");
}

bool HostRoster::charge(const std::string& key, TokenBucket PeerState::*budget, const std::string& what) {
    auto it = peers_.find(key);
    if (it == peers_.end()) {  // not admitted yet: only its hello is looked at, and that is rate-limited too
        if (peers_.size() >= static_cast<std::size_t>(4 * islands_ + 16)) return false;
        it = peers_.emplace(key, PeerState{}).first;
    }
    PeerState& p = it->second;
    if ((p.*budget).take(clock_.now())) return true;
    if (p.over_budget++ % 1000 == 0) {
        log_("dropped a " + what + " from " + who(key) + ": over its message budget (" +
             std::to_string(p.over_budget) + " dropped so far)");
        event_({.kind = "over_budget", .peer = p.name, .type = what});
    }
    return false;
}

std::optional<HostRoster::Seat> HostRoster::seat(const std::string& key) {
    if (const auto it = island_of_.find(key); it != island_of_.end()) return Seat{it->second, false};
    if (island_of_.size() >= static_cast<std::size_t>(islands_)) return std::nullopt;
    uint32_t next = 0;  // the lowest free index: a revoked island's goes to the next newcomer
    while (std::any_of(island_of_.begin(), island_of_.end(), [&](const auto& kv) { return kv.second == next; })) ++next;
    island_of_[key] = next;
    return Seat{next, true};
}

std::optional<uint32_t> HostRoster::release(const std::string& key) {
    const auto it = island_of_.find(key);
    if (it == island_of_.end()) return std::nullopt;
    const uint32_t island = it->second;
    island_of_.erase(it);
    return island;
}

PeerState* HostRoster::find(const std::string& key) {
    const auto it = peers_.find(key);
    return it == peers_.end() ? nullptr : &it->second;
}

std::string HostRoster::who(const std::string& key) const {
    const auto it = peers_.find(key);
    return it == peers_.end() || it->second.name.empty() ? short_key(key) : it->second.name;
}

bool HostRoster::every_island_in_sync() const {
    return std::none_of(peers_.begin(), peers_.end(), [](const auto& kv) { return kv.second.waits(); });
}

int HostRoster::ready() const {
    return static_cast<int>(std::count_if(peers_.begin(), peers_.end(), [](const auto& kv) {
        return kv.second.connected && kv.second.welcomed && kv.second.in_sync;
    }));
}

}  // namespace arch
