// core/data_manifest.h: training data named by its content, so machines that share no disk agree on
// it. A manifest lists the shards of a data set (file name, token count, BLAKE2b-256 of the whole
// file: `b2sum -l 256` prints the same) and cuts each shard into chunks of at most chunk_tokens
// tokens, each with the BLAKE2b-256 of its tokens' bytes as the shard stores them (uint16 or uint32
// little-endian: every shard of a data set has the same width). An island's data is a list of chunks:
// interleaved (chunk g goes to island g mod n, so every island sees the same distribution) or
// contiguous (island i gets the i-th n-th of the chunks, for non-IID experiments).
// Everything here streams: no whole shard is held in memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/named_enum.h"

namespace arch {

struct ManifestShard {
    std::string name;  // the file's name, without its folder: a label, never opened by a peer
    uint64_t tokens = 0;
    std::string hash;  // BLAKE2b-256 of the whole file, hex
};

struct DataChunk {
    uint32_t shard = 0;  // index into DataManifest::shards
    uint64_t offset = 0, tokens = 0;  // a token range of that shard
    std::string hash;                 // BLAKE2b-256 of the range's little-endian bytes at the shards' width, hex
};

struct DataManifest {
    std::vector<ManifestShard> shards;
    std::vector<DataChunk> chunks;  // every chunk, in shard order
    int token_bytes = 2;            // every shard's width: 2 (uint16) or 4 (uint32)
    uint64_t total_tokens() const;
};

enum class DataAssign { interleaved, contiguous };
const EnumNames<DataAssign>& data_assign_names();  // "interleaved", "contiguous" (run.toml's data.assign)
DataAssign parse_data_assign(const std::string& name);  // throws arch::Error naming the choices

constexpr uint64_t kMaxChunkTokens = 1 << 20;  // 2 MiB of tokens: one chunk is always cheap to hold

// About 64 chunks per island (so interleaving mixes well), between 1024 and kMaxChunkTokens tokens.
uint64_t choose_chunk_tokens(uint64_t total_tokens, int islands);

// The paths matching `pattern`, sorted (the order of a manifest's shards), and their total tokens.
std::vector<std::string> shard_paths(const std::string& pattern);
uint64_t count_tokens(const std::vector<std::string>& paths);

// Hashes every shard matching `pattern` (sorted glob order; throws if none, or if their widths differ)
// and cuts it into chunks.
DataManifest build_manifest(const std::string& pattern, uint64_t chunk_tokens);

// The chunks island `island` of `islands` trains on, in order. Throws arch::Error when an island would
// get fewer than min_tokens tokens.
std::vector<DataChunk> assign_chunks(const DataManifest& m, int islands, int island, DataAssign how,
                                     uint64_t min_tokens);

std::string hash_file(const std::string& path);               // BLAKE2b-256 hex of the whole file, streamed
std::string hash_bytes(const void* data, std::size_t n);       // BLAKE2b-256 hex
std::string hash_tokens(const std::vector<uint16_t>& tokens);  // of their uint16 little-endian bytes

}  // namespace arch
