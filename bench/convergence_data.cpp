// bench/convergence_data.cpp: make_bench_data.
#include "bench/convergence_data.h"

#include <cstdio>
#include <filesystem>

#include "core/data_manifest.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/token_shard.h"

namespace arch::bench {
namespace {

// Fisher-Yates with the project's own generator, so the order is the same on every machine.
void shuffle(std::vector<DataChunk>& chunks, uint64_t seed) {
    Rng rng(seed);
    for (std::size_t i = chunks.size(); i > 1; --i) std::swap(chunks[i - 1], chunks[rng.next_u64() % i]);
}

uint64_t tokens_of(const std::vector<DataChunk>& chunks) {
    uint64_t n = 0;
    for (const DataChunk& c : chunks) n += c.tokens;
    return n;
}

bool shard_ready(const std::string& path, uint64_t tokens, int token_bytes) {
    std::error_code ec;
    return std::filesystem::file_size(path, ec) == kTokenShardHeaderBytes + static_cast<uint64_t>(token_bytes) * tokens && !ec;
}

void write_shard(const std::string& path, const std::vector<std::string>& shards, const std::vector<DataChunk>& chunks,
                 int token_bytes) {
    if (shard_ready(path, tokens_of(chunks), token_bytes)) return;
    TokenShardWriter out(path, tokens_of(chunks), token_bytes);
    for (const DataChunk& c : chunks) out.append_bytes(read_token_bytes(shards[c.shard], c.offset, c.tokens));
    out.finish();
}

// Island 0's first chunk, island 1's first, ..., island 0's second, ...
std::vector<DataChunk> in_turn(const std::vector<std::vector<DataChunk>>& per_island) {
    std::vector<DataChunk> out;
    for (std::size_t k = 0;; ++k) {
        bool any = false;
        for (const auto& m : per_island)
            if (k < m.size()) out.push_back(m[k]), any = true;
        if (!any) return out;
    }
}

}  // namespace

BenchData make_bench_data(const std::string& train_pattern, int islands, const std::string& assign,
                          uint64_t min_tokens, uint64_t warm_tokens, const std::string& out_dir) {
    const std::vector<std::string> shards = shard_paths(train_pattern);
    BenchData d;
    d.chunk_tokens = choose_chunk_tokens(count_tokens(shards), islands);
    const DataManifest manifest = build_manifest(train_pattern, d.chunk_tokens);
    const DataAssign how = parse_data_assign(assign);
    std::string names;  // the folder is named by the data's content and the cut
    for (const ManifestShard& s : manifest.shards) names += s.hash;
    const std::string dir = out_dir + "/" + assign + "-" + std::to_string(islands) + "-" +
                            hash_bytes(names.data(), names.size()).substr(0, 12) +
                            (warm_tokens > 0 ? "-warm" + std::to_string(warm_tokens) : "");
    std::filesystem::create_directories(dir);
    std::vector<std::vector<DataChunk>> mine, warm(static_cast<std::size_t>(islands));
    const uint64_t warm_each = (warm_tokens + static_cast<uint64_t>(islands) - 1) / static_cast<uint64_t>(islands);
    for (int i = 0; i < islands; ++i) {
        mine.push_back(assign_chunks(manifest, islands, i, how, min_tokens));
        shuffle(mine.back(), 1000 + static_cast<uint64_t>(i));
        auto& w = warm[static_cast<std::size_t>(i)];
        while (tokens_of(w) < warm_each && mine.back().size() > 1) {  // the end of the island's order
            w.push_back(mine.back().back());
            mine.back().pop_back();
        }
        if (tokens_of(w) < warm_each) throw Error("the corpus is too small for a warm start of " + std::to_string(warm_tokens) + " tokens");
        d.island_shards.push_back(dir + "/island_" + std::to_string(i) + ".bin");
        d.island_tokens.push_back(tokens_of(mine.back()));
        write_shard(d.island_shards.back(), shards, mine.back(), manifest.token_bytes);
    }
    d.all_shard = dir + "/all.bin";
    const std::vector<DataChunk> all = in_turn(mine);
    d.all_tokens = tokens_of(all);
    write_shard(d.all_shard, shards, all, manifest.token_bytes);
    if (warm_tokens > 0) {
        d.warm_shard = dir + "/warm.bin";
        const std::vector<DataChunk> w = in_turn(warm);
        d.warm_tokens = tokens_of(w);
        write_shard(d.warm_shard, shards, w, manifest.token_bytes);
    }
    return d;
}

}  // namespace arch::bench
