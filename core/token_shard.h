// core/token_shard.h: read and write llm.c token shards, the data format of ARCHITECTURE.md.
// Layout: 256 little-endian int32 header (magic 20240520, version 1, token count, rest zero), then
// that many uint16 tokens and nothing else. llm.c's data scripts produce the same files.
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

namespace arch {

constexpr int32_t kTokenShardMagic = 20240520;
constexpr int32_t kTokenShardVersion = 1;
constexpr size_t kTokenShardHeaderBytes = 256 * sizeof(int32_t);

// Writes path.tmp, then renames it over path: a failed write leaves any existing path untouched.
void write_token_shard(const std::string& path, std::span<const uint16_t> tokens);

// Writes a shard of a known token count piece by piece into path.tmp, renamed over path by finish(),
// so a large shard is never held in memory whole. Destroyed unfinished, it removes path.tmp.
class TokenShardWriter {
public:
    TokenShardWriter(std::string path, uint64_t tokens);
    ~TokenShardWriter();
    void append(std::span<const uint16_t> tokens);
    void finish();  // throws unless exactly the declared tokens were appended and written

private:
    std::string path_, tmp_;
    uint64_t tokens_, written_ = 0;
    std::ofstream out_;
    bool finished_ = false;
};

// Reads a whole shard; throws arch::Error for a missing file, wrong magic or version, or a file size
// that differs from the header's token count (truncated or extra bytes).
std::vector<uint16_t> read_token_shard(const std::string& path);

// Reads tokens [offset, offset + count) of a shard, after the same checks as read_token_shard.
std::vector<uint16_t> read_token_range(const std::string& path, uint64_t offset, uint64_t count);

// Reads and validates only the header and the file size; returns the token count.
uint64_t read_token_shard_count(const std::string& path);

}  // namespace arch
