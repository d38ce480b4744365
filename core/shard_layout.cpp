// core/shard_layout.cpp: ShardLayout.
#include "core/shard_layout.h"

#include <algorithm>

#include "core/adamw.h"
#include "core/error.h"
#include "core/param_store.h"

namespace arch {

ShardLayout::ShardLayout(const ParamLayout& layout, int world_size, int rank_index, std::size_t align)
    : world(world_size), rank(rank_index) {
    if (world < 1 || rank < 0 || rank >= world || align == 0)
        throw Error("ZeRO-3: rank " + std::to_string(rank) + " of " + std::to_string(world) + " is not a shard");
    const std::size_t N = static_cast<std::size_t>(world), r = static_cast<std::size_t>(rank);
    for (int u = 0; u < num_units(layout); ++u) {
        ShardUnit un;
        un.begin = unit_begin(layout, u);
        un.size = unit_size(layout, u);
        un.piece = ((un.size + N - 1) / N + align - 1) / align * align;
        un.full = un.piece * N;
        un.shard_offset = shard_size;
        shard_size += un.piece;
        max_piece = std::max(max_piece, un.piece);
        max_full = std::max(max_full, un.full);
        const std::size_t lo = std::min(un.size, r * un.piece), hi = std::min(un.size, (r + 1) * un.piece);
        ranges.push_back({un.begin + lo, hi - lo, un.shard_offset});
        units.push_back(un);
    }
    // Each owned range cut at the whole vector's decay runs.
    const std::vector<DecayRange> runs = decay_ranges(layout);
    for (const ShardRange& sr : ranges) {
        for (const DecayRange& run : runs) {
            const std::size_t a = std::max(sr.begin, run.begin), b = std::min(sr.begin + sr.size, run.begin + run.size);
            if (a >= b) continue;
            decay.push_back({sr.shard_offset + (a - sr.begin), b - a, run.decay, run.begin, a - run.begin});
        }
    }
}

int ShardLayout::unit_of(std::size_t flat_index) const {
    for (std::size_t u = 0; u < units.size(); ++u)
        if (flat_index >= units[u].begin && flat_index < units[u].begin + units[u].size) return static_cast<int>(u);
    throw Error("ZeRO-3: flat index " + std::to_string(flat_index) + " is in no unit");
}

}  // namespace arch
