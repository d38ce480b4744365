// core/data_split.h: gives each of n islands its own disjoint slice of a training set: the tokens of
// all shards matching a pattern, cut into n contiguous parts, each written as its own llm.c shard.
#pragma once

#include <string>
#include <vector>

namespace arch {

// Writes out_dir/island_<i>_of_<n>.bin for i in [0, n) unless they already exist with the right
// sizes; returns their paths. Throws arch::Error if a slice would be too short to hold min_tokens.
std::vector<std::string> split_for_islands(const std::string& train_pattern, int n, const std::string& out_dir,
                                           std::size_t min_tokens);

}  // namespace arch
