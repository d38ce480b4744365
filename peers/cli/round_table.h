// peers/cli/round_table.h: the host's per-round table on stdout (round, islands, mean inner loss, val
// loss, bytes up and down, compression ratio, seconds, H, and in a run with differential privacy the ε
// spent so far; with H from the link, a line under the row says why that H). Log lines go through
// core/log.h instead.
#pragma once

#include <cstdio>
#include <string>

#include "peers/host.h"

namespace arch::cli {

class RoundTable {
public:
    void print(const RoundRow& r) {
        if (rows_++ == 0) {
            std::printf("%5s %7s %10s %9s %12s %12s %7s %8s %6s%s\n", "round", "islands", "inner loss", "val loss", "bytes up",
                        "bytes down", "ratio", "seconds", "H", r.epsilon >= 0 ? "  epsilon" : "");
        }
        std::printf("%5llu %7d %10.4f %9.4f %12llu %12llu %6.1fx %8.1f %6u", static_cast<unsigned long long>(r.round),
                    r.islands, r.mean_inner_loss, r.val_loss, static_cast<unsigned long long>(r.bytes_up),
                    static_cast<unsigned long long>(r.bytes_down), r.compression_ratio, r.seconds, r.steps);
        if (r.epsilon >= 0) std::printf(" %8.4f", r.epsilon);
        // H from the link says why, under its row; a fixed H needs no line.
        if (r.steps_why.rfind("auto", 0) == 0) std::printf("\n      H %u: %s", r.steps, r.steps_why.c_str());
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
