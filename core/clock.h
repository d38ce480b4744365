// core/clock.h: the one way the run reads the time (STYLE.md, "Seams for the outside world").
// Deadlines, rates and timings ask a Clock: programs pass Clock::real() (std::chrono::steady_clock),
// a test passes a ManualClock and advances it, so a deadline passes without anyone waiting for it.
// Only now() goes through the seam: waits (a poll's timeout) still take real time.
#pragma once

#include <atomic>
#include <chrono>

namespace arch {

class Clock {
public:
    using duration = std::chrono::steady_clock::duration;
    using time_point = std::chrono::steady_clock::time_point;

    virtual ~Clock() = default;
    virtual time_point now() const = 0;
    double seconds_since(time_point t) const { return std::chrono::duration<double>(now() - t).count(); }
    // `seconds` from now (a deadline), rounded to the clock's tick.
    time_point after(double seconds) const { return now() + ticks(seconds); }

    static const Clock& real();  // the machine's monotonic clock

protected:
    static duration ticks(double seconds) {
        return std::chrono::duration_cast<duration>(std::chrono::duration<double>(seconds));
    }
};

// Time that moves only when a test advances it. Any thread may read it while another advances it.
class ManualClock final : public Clock {
public:
    time_point now() const override { return time_point(duration(ticks_.load())); }
    void advance(double seconds) { ticks_ += ticks(seconds).count(); }

private:
    std::atomic<duration::rep> ticks_{duration(std::chrono::hours(1)).count()};  // not the epoch: "never" stays in the past
};

}  // namespace arch
