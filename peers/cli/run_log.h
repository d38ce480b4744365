// peers/cli/run_log.h: what the host and peer commands print: timestamped log lines on stderr and
// the host's per-round table on stdout (round, islands, mean inner loss, val loss, bytes up and
// down, compression ratio, seconds).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "peers/host.h"

namespace arch::cli {

class RunLog {
public:
    explicit RunLog(std::string who) : who_(std::move(who)), start_(std::chrono::steady_clock::now()) {}
    void line(const std::string& text) const {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
        std::fprintf(stderr, "[%s %7.1fs] %s\n", who_.c_str(), s, text.c_str());
        std::fflush(stderr);
    }

private:
    std::string who_;
    std::chrono::steady_clock::time_point start_;
};

class RoundTable {
public:
    void print(const RoundRow& r) {
        if (rows_++ == 0) {
            std::printf("%5s %7s %10s %9s %12s %12s %7s %8s\n", "round", "islands", "inner loss", "val loss", "bytes up",
                        "bytes down", "ratio", "seconds");
        }
        std::printf("%5llu %7d %10.4f %9.4f %12llu %12llu %6.1fx %8.1f\n", static_cast<unsigned long long>(r.round),
                    r.islands, r.mean_inner_loss, r.val_loss, static_cast<unsigned long long>(r.bytes_up),
                    static_cast<unsigned long long>(r.bytes_down), r.compression_ratio, r.seconds);
        std::fflush(stdout);
        up_ += r.bytes_up;
        down_ += r.bytes_down;
    }
    void summary() const {
        if (rows_ > 0)
            std::printf("total: %d rounds, %.2f MB up, %.2f MB down\n", rows_, up_ / 1e6, down_ / 1e6);
    }

private:
    int rows_ = 0;
    double up_ = 0, down_ = 0;
};

}  // namespace arch::cli
