// core/data_split.cpp: split_for_islands(): read every shard (sorted glob order), cut, write.
#include "core/data_split.h"

#include <glob.h>

#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/token_shard.h"

namespace arch {

std::vector<std::string> split_for_islands(const std::string& train_pattern, int n, const std::string& out_dir,
                                           std::size_t min_tokens) {
    if (n <= 0) throw Error("split_for_islands: need at least one island, got " + std::to_string(n));
    glob_t g{};
    const int rc = ::glob(train_pattern.c_str(), 0, nullptr, &g);
    std::vector<std::string> shards;
    if (rc == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) shards.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (shards.empty()) throw Error("no training shards match '" + train_pattern + "'");

    std::vector<std::string> out;
    for (int i = 0; i < n; ++i)
        out.push_back(out_dir + "/island_" + std::to_string(i) + "_of_" + std::to_string(n) + ".bin");
    std::filesystem::create_directories(out_dir);
    const FileLock lock(out_dir + "/.lock");  // islands starting together write the slices once
    uint64_t total = 0;
    for (const std::string& s : shards) total += read_token_shard_count(s);
    const uint64_t per_island = total / static_cast<uint64_t>(n);
    if (per_island < min_tokens)
        throw Error("the training data ('" + train_pattern + "', " + std::to_string(total) + " tokens) is too small for " +
                    std::to_string(n) + " islands of at least " + std::to_string(min_tokens) + " tokens each");
    bool done = true;
    for (const std::string& path : out) done = done && file_exists(path) && read_token_shard_count(path) == per_island;
    if (done) return out;

    std::vector<uint16_t> all;
    all.reserve(total);
    for (const std::string& s : shards) {
        const std::vector<uint16_t> t = read_token_shard(s);
        all.insert(all.end(), t.begin(), t.end());
    }
    for (int i = 0; i < n; ++i)
        write_token_shard(out[i], std::span<const uint16_t>(all.data() + per_island * i, per_island));
    return out;
}

}  // namespace arch
