// peers/rounds/round_policy.cpp: run.mode -> its round policy. The one place that maps a mode's name
// to its rules; the host only ever sees the RoundPolicy interface.
#include "peers/rounds/round_policy.h"

#include "core/error.h"
#include "peers/rounds/async_policy.h"
#include "peers/rounds/overlap_policy.h"
#include "peers/rounds/streaming_policy.h"
#include "peers/rounds/sync_policy.h"
#include "peers/run_config.h"

namespace arch::rounds {

std::unique_ptr<RoundPolicy> make_round_policy(const RunConfig& c, Notes notes) {
    const auto H = static_cast<uint32_t>(c.steps_per_round);
    switch (c.mode) {
        case RunMode::sync:
        case RunMode::overlap: {
            std::unique_ptr<SyncPolicy> p;
            if (c.mode == RunMode::sync) p = std::make_unique<SyncPolicy>(H, c.round_timeout_s, c.fold_stragglers, std::move(notes));
            else p = std::make_unique<OverlapPolicy>(H, c.round_timeout_s, c.fold_stragglers, std::move(notes));
            if (c.auto_steps) p->steps_from_link(c.auto_h);
            return p;
        }
        case RunMode::async: {
            auto p = std::make_unique<AsyncPolicy>(H, StalenessRule{static_cast<uint64_t>(c.max_staleness), c.stale});
            if (c.auto_steps) p->steps_from_link(c.auto_h);
            return p;
        }
        case RunMode::streaming:  // run_config.cpp refuses "auto" for it
            return std::make_unique<StreamingPolicy>(H, static_cast<uint32_t>(c.fragments), c.round_timeout_s, std::move(notes));
    }
    throw Error("run.mode has no round policy");
}

}  // namespace arch::rounds
