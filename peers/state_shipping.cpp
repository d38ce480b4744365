// peers/state_shipping.cpp: StateShipping.
#include "peers/state_shipping.h"

#include <utility>

#include "core/bytes.h"
#include "peers/protocol.h"

namespace arch {

SharedBlob StateShipping::current(uint64_t round, const diloco::GlobalModel& global) {
    if (SharedBlob made = blob_.lock(); made && of_ == global.hash()) return made;
    retire();
    auto state = std::make_shared<diloco::GlobalModel::ReplicaState>(global.replica_state());
    ByteWriter w;  // StateMeta, then the replica state's length: what bytes() would put in front of it
    w.bytes(protocol::encode(protocol::StateMeta{round, global.hash()}));
    w.u64(global.replica_state_bytes());
    w.raw(state->head);
    state->head = w.take();
    std::vector<std::span<const std::byte>> pieces{state->head, state->theta_bytes(), state->tail};
    SharedBlob made = std::make_shared<const Blob>(std::move(pieces), state);
    blob_ = made;
    of_ = global.hash();
    return made;
}

void StateShipping::retire() {
    std::erase_if(stale_, [](const auto& weak) { return weak.expired(); });
    if (!blob_.expired()) stale_.push_back(std::exchange(blob_, {}));
}

std::vector<std::string> StateShipping::withdraw_stale(Link& link, const std::string& key, const std::string& hash) {
    if (of_ != hash) retire();
    bool withdrawn = false;
    for (const auto& weak : std::exchange(stale_, {}))
        if (SharedBlob stale = weak.lock()) {
            link.withdraw(stale);
            withdrawn = true;
        }
    std::vector<std::string> waiting;
    if (withdrawn)
        for (const auto& [peer, theta] : awaiting_)
            if (peer != key && theta != hash) waiting.push_back(peer);
    return waiting;
}

bool StateShipping::queued_for(const std::string& key) {
    std::string& on_its_way = awaiting_[key];
    if (on_its_way == of_) return false;
    on_its_way = of_;
    return true;
}

}  // namespace arch
