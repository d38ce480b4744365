// peers/rate_limit.h: a token bucket, for the host's per-peer message budgets (hellos, hash reports):
// `burst` messages at once, then `per_second` on average; what is over budget is dropped by the caller.
#pragma once

#include <algorithm>
#include <chrono>

#include "core/clock.h"

namespace arch {

class TokenBucket {
public:
    TokenBucket(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}

    // Takes one token if there is one at `now` (the caller's Clock, core/clock.h).
    bool take(Clock::time_point now) {
        if (started_) tokens_ = std::min(burst_, tokens_ + rate_ * std::chrono::duration<double>(now - last_).count());
        started_ = true;
        last_ = now;
        if (tokens_ < 1) return false;
        tokens_ -= 1;
        return true;
    }

private:
    double rate_, burst_, tokens_;
    bool started_ = false;
    Clock::time_point last_{};
};

}  // namespace arch
