// core/shard_layout.h: where ZeRO-3's shards lie: each unit (param_store.h: a block, or the globals)
// cut into N equal pieces, rank r owning piece r of every unit, stored back to back in its shard
// buffers; and the AdamW decay runs of the whole flat vector cut at the shard's borders. Pure
// arithmetic, shared by the CPU store (core/zero3.h) and the GPUs' (kernels/cuda/cuda_shards.h).
#pragma once

#include <cstddef>
#include <vector>

#include "core/param_layout.h"

namespace arch {

// One range of the flat vector that this rank owns: [begin, begin + size) of the flat buffer is
// stored at [shard_offset, shard_offset + size) of the shard buffers.
struct ShardRange {
    std::size_t begin = 0;
    std::size_t size = 0;
    std::size_t shard_offset = 0;
};

struct ShardUnit {
    std::size_t begin = 0, size = 0;  // in the flat vector
    std::size_t piece = 0;            // elements per rank: ceil(size / N), rounded up to `align`
    std::size_t shard_offset = 0;     // where this rank's piece sits in the shard buffers
    std::size_t full = 0;             // piece * N: a gathered unit, padding included
};

// A run of the shard that AdamW updates with one decay flag; `from_run_start` is its distance from
// the start of the whole-vector decay run (core/adamw.h decay_ranges) it was cut from, so a
// per-element hash over that run (the GPU's stochastic rounding) is the same sharded or not.
struct ShardDecayRange {
    std::size_t shard_offset = 0, size = 0;
    bool decay = false;
    std::size_t run_begin = 0;       // the whole-vector run's first flat index
    std::size_t from_run_start = 0;  // flat index of this piece's first element minus run_begin
};

struct ShardLayout {
    // align: pieces are a multiple of it (2 lets the GPU gather bf16 pieces as float pairs).
    ShardLayout(const ParamLayout& layout, int world, int rank, std::size_t align = 1);

    int world, rank;
    std::vector<ShardUnit> units;       // per unit (blocks 0..L-1, then the globals)
    std::vector<ShardRange> ranges;     // this rank's piece of each unit (some may be empty)
    std::vector<ShardDecayRange> decay;  // AdamW's runs on the shard
    std::size_t shard_size = 0;          // elements in the shard buffers, padding included
    std::size_t max_piece = 0;
    std::size_t max_full = 0;            // the largest gathered unit

    int unit_of(std::size_t flat_index) const;  // the unit holding a flat index
};

// fn(at, shard_offset, count) for each part of [offset, offset + n) of the flat vector that `ranges`
// hold: [offset + at, offset + at + count) lies at [shard_offset, shard_offset + count) of the shard.
template <class Fn>
void for_each_shard_part(const std::vector<ShardRange>& ranges, std::size_t offset, std::size_t n, Fn&& fn) {
    for (const ShardRange& r : ranges) {
        const std::size_t from = r.begin > offset ? r.begin : offset;
        const std::size_t to = r.begin + r.size < offset + n ? r.begin + r.size : offset + n;
        if (from < to) fn(from - offset, r.shard_offset + (from - r.begin), to - from);
    }
}

}  // namespace arch
