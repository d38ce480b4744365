// net/log_throttle.cpp: LogThrottle.
#include "net/log_throttle.h"

namespace arch::net {

LogThrottle::LogThrottle(int lines_per_window, double window_s, const Clock& clock)
    : per_window_(lines_per_window), window_s_(window_s), clock_(clock), started_(clock.now()) {}

void LogThrottle::roll() {
    if (clock_.seconds_since(started_) < window_s_) return;
    started_ = clock_.now();
    logged_ = 0;
}

bool LogThrottle::admit() {
    roll();
    if (logged_ < per_window_) {
        ++logged_;
        return true;
    }
    ++left_out_;
    return false;
}

std::string LogThrottle::summary(const std::string& what) {
    if (left_out_ == 0 || clock_.seconds_since(started_) < window_s_) return "";
    const std::string line = std::to_string(left_out_) + " more " + what + ", not logged one by one (at most " +
                             std::to_string(per_window_) + " every " + std::to_string(static_cast<int>(window_s_)) + " s are)";
    left_out_ = 0;
    roll();
    return line;
}

}  // namespace arch::net
