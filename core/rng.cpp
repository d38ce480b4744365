// core/rng.cpp: fill_normal, Rng's normal draws for a whole tensor on every thread.
#include <algorithm>
#include <vector>

#include "core/rng.h"

namespace arch {

void fill_normal(Rng& rng, float* out, std::size_t count, float scale) {
    constexpr std::size_t kPiece = std::size_t{1} << 16;
    std::vector<uint64_t> draws(2 * std::min(count, kPiece));
    for (std::size_t first = 0; first < count; first += kPiece) {
        const std::size_t n = std::min(kPiece, count - first);
        for (std::size_t i = 0; i < 2 * n; ++i) draws[i] = rng.next_u64();
#pragma omp parallel for schedule(static) if (n >= kPiece)
        for (std::size_t i = 0; i < n; ++i) out[first + i] = scale * Rng::box_muller(draws[2 * i], draws[2 * i + 1]);
    }
}

}  // namespace arch
