// peers/cli/round_table.h: the host's per-round table on stdout (round, islands, mean inner loss, val
// loss, bytes up and down, compression ratio, seconds, and in a run with differential privacy the ε
// spent so far). Log lines go through core/log.h instead.
#pragma once

#include <cstdio>
#include <string>

#include "peers/host.h"

namespace arch::cli {

class RoundTable {
public:
    void print(const RoundRow& r) {
        if (rows_++ == 0) {
            std::printf("%5s %7s %10s %9s %12s %12s %7s %8s%s\n", "round", "islands", "inner loss", "val loss", "bytes up",
                        "bytes down", "ratio", "seconds", r.epsilon >= 0 ? "  epsilon" : "");
        }
        std::printf("%5llu %7d %10.4f %9.4f %12llu %12llu %6.1fx %8.1f", static_cast<unsigned long long>(r.round),
                    r.islands, r.mean_inner_loss, r.val_loss, static_cast<unsigned long long>(r.bytes_up),
                    static_cast<unsigned long long>(r.bytes_down), r.compression_ratio, r.seconds);
        if (r.epsilon >= 0) std::printf(" %8.4f", r.epsilon);
        std::printf("\n");
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
