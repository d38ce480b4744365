// bench/convergence_data.h: the data of bench_convergence, cut as a run's host cuts it. The training
// shards are named by a manifest (core/data_manifest.h) and each island gets its chunks by the host's
// rule (interleaved by default, contiguous for non-IID experiments). Each island's chunks are
// written, in a seeded shuffled order, to one shard it reads sequentially, so no token is read twice
// within an epoch; the one-island rows read every island's chunks, taken in turn, from one shard.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace arch::bench {

struct BenchData {
    std::vector<std::string> island_shards;    // one per island
    std::vector<uint64_t> island_tokens;        // tokens in each
    std::string all_shard;                      // every island's chunks, in turn: the one-island rows
    uint64_t all_tokens = 0;
    uint64_t chunk_tokens = 0;
};

// Writes (once: reused when present with the right size) the shards under out_dir.
BenchData make_bench_data(const std::string& train_pattern, int islands, const std::string& assign,
                          uint64_t min_tokens, const std::string& out_dir);

}  // namespace arch::bench
