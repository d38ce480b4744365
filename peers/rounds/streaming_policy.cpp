// peers/rounds/streaming_policy.cpp: StreamingPolicy.
#include "peers/rounds/streaming_policy.h"

namespace arch::rounds {

ScheduleSpan streaming_span(uint64_t round, uint32_t fragments, uint32_t H) {
    const uint64_t cycle = round / fragments, k = round % fragments;
    return {cycle * H + k * H / fragments, cycle * H + (k + 1) * H / fragments};
}

StreamingPolicy::StreamingPolicy(uint32_t steps_per_round, uint32_t fragments, double round_timeout_s, Notes notes)
    : SyncPolicy(steps_per_round, round_timeout_s, false, std::move(notes)), H_(steps_per_round), P_(fragments) {}

Start StreamingPolicy::start(const RunSnapshot& run, const std::string& key) const {
    Start s;
    s.key = key;
    s.schedule = streaming_span(run.round, P_, H_);
    s.steps = static_cast<uint32_t>(s.schedule.to - s.schedule.from);
    return s;  // nothing is held: no error feedback, no folding
}

}  // namespace arch::rounds
