// net/log_throttle.h: log lines about outsiders (a failed handshake, a key the allow-list refuses)
// at a bounded rate, so that raw TCP connections cannot fill the disk. The first lines of each window
// of time are logged; the rest are counted, and once the window has ended one line says how many
// were left out. Not thread-safe: its owner calls it from one thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/clock.h"

namespace arch::net {

class LogThrottle {
public:
    LogThrottle(int lines_per_window, double window_s, const Clock& clock = Clock::real());

    // Whether to log this line now; if not, it is counted.
    bool admit();
    // n lines that never reached admit (a queue that was full): counted as left out.
    void left_out(uint64_t n) { left_out_ += n; }
    // Once a window with lines left out has ended: the line that says so ("": nothing to say).
    std::string summary(const std::string& what);

private:
    void roll();

    int per_window_;
    double window_s_;
    const Clock& clock_;
    Clock::time_point started_;
    int logged_ = 0;
    uint64_t left_out_ = 0;
};

}  // namespace arch::net
