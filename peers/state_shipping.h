// peers/state_shipping.h: the state a host ships to a joiner, a restarted peer or one too far behind
// (StateMeta, then GlobalModel's replica state): one blob per θ, made when a peer needs it and shared
// by every send queue that holds it. Its θ is not a copy: the blob holds a snapshot of the host's θ
// (as the checkpoint writer does), so θ is copied only if the next update changes it while a queue
// still sends the blob, and a host with nobody to catch up holds no second θ. When θ moves on, the old
// blob lives only while a queue still sends it (its peer catches up with the updates queued after
// it); the next state sent takes the old ones off every queue and re-sends the peers that still
// waited for one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

private:
    std::weak_ptr<const Blob> blob_;  // alive while a send queue holds it
    std::string of_;          // the θ hash it was made from
    std::vector<std::weak_ptr<const Blob>> stale_;  // copies of older θs, alive while held
    std::map<std::string, std::string> awaiting_;  // peers a copy was sent to, not yet in sync: its θ hash
};

}  // namespace arch
