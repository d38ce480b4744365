// peers/state_shipping.h: the state a host ships to a joiner, a restarted peer or one too far behind
// (StateMeta, then GlobalModel::save_replica_state): one copy per θ, made when a peer needs it and
// shared by every send queue that holds it; it lives only while one does (the checkpoint writer reads
// θ itself: copy on write), so a host with nobody to catch up holds no copy of θ. When θ moves on, the
// old copy lives only while a queue still sends it (its peer catches up with the updates queued after
// it); the next state sent takes the old ones off every queue and re-sends the
// peers that still waited for one. The memory comes back through a BlobPool, which also lends the
// round's aggregate its buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "peers/blob_pool.h"
#include "peers/diloco/global_model.h"
#include "peers/link.h"

namespace arch {

class StateShipping {
public:
    // The state of `global`'s current θ, made (at `round`) once per θ while a queue holds it.
    SharedBlob current(uint64_t round, const diloco::GlobalModel& global);
    void retire();  // θ moved on: the copy is let go of, and withdrawn when a joiner needs the new one

    // Before the state of θ `hash` is sent to `key`: the copies of older θs come off every queue and
    // are freed. Returns the other peers that were waiting for one of them: they need the new one.
    std::vector<std::string> withdraw_stale(Link& link, const std::string& key, const std::string& hash);
    // The current copy was queued for `key`: true unless that copy was already on its way to it.
    bool queued_for(const std::string& key);
    void settled(const std::string& key) { awaiting_.erase(key); }  // in sync, gone or revoked

    std::vector<std::byte> borrow() { return pool_->take(); }  // the last copy's memory, for the aggregate
    void give_back(std::vector<std::byte> room) { pool_->keep(std::move(room)); }

private:
    std::weak_ptr<const std::vector<std::byte>> blob_;  // alive while a send queue holds it
    std::string of_;          // the θ hash it was made from
    std::shared_ptr<BlobPool> pool_ = BlobPool::make();
    std::vector<std::weak_ptr<const std::vector<std::byte>>> stale_;  // copies of older θs, alive while held
    std::map<std::string, std::string> awaiting_;  // peers a copy was sent to, not yet in sync: its θ hash
};

}  // namespace arch
