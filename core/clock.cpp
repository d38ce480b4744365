// core/clock.cpp: the real clock (core/clock.h), the only caller of std::chrono::steady_clock::now().
#include "core/clock.h"

namespace arch {

namespace {
class SteadyClock final : public Clock {
public:
    time_point now() const override { return std::chrono::steady_clock::now(); }
};
}  // namespace

const Clock& Clock::real() {
    static const SteadyClock clock;
    return clock;
}

}  // namespace arch
