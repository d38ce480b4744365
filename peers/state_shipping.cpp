// peers/state_shipping.cpp: StateShipping.
#include "peers/state_shipping.h"

#include <utility>

#include "peers/protocol.h"

namespace arch {

SharedBlob StateShipping::current(uint64_t round, const diloco::GlobalModel& global) {
    if (SharedBlob made = blob_.lock(); made && of_ == global.hash()) return made;
    retire();
    ByteWriter w(pool_->take());  // the memory of the last copy nobody holds any more
    w.bytes(protocol::encode(protocol::StateMeta{round, global.hash()}));
    const std::span<std::byte> state = w.bytes_in_place(global.replica_state_bytes());
    global.save_replica_state(state);
    std::vector<std::byte> blob = w.take();
    SharedBlob made = pool_->share(std::move(blob));
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
