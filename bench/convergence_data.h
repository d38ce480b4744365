// bench/convergence_data.h: the data of bench_convergence, cut as a run's host cuts it. The training
// shards are named by a manifest (core/data_manifest.h) and each island gets its chunks by the host's
// rule (interleaved by default, contiguous for non-IID experiments). Each island's chunks are
// written, in a seeded shuffled order, to one shard it reads sequentially, so no token is read twice
// within an epoch; the one-island rows read every island's chunks, taken in turn, from one shard.
// A warm start (--warm-steps) reads its own shard: chunks taken from the end of every island's order
// and left out of the islands' shards, so no row reads a token the warm start read.
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
    std::string warm_shard;                     // the warm start's chunks (empty: no warm start)
    uint64_t warm_tokens = 0;
    uint64_t chunk_tokens = 0;
};

// Writes (once: reused when present with the right size) the shards under out_dir; warm_tokens > 0
// sets at least that many tokens aside for the warm start.
BenchData make_bench_data(const std::string& train_pattern, int islands, const std::string& assign,
                          uint64_t min_tokens, uint64_t warm_tokens, const std::string& out_dir);

}  // namespace arch::bench
