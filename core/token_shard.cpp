// core/token_shard.cpp: llm.c token shard I/O with full validation of header and size.
// Tokens are stored little-endian; this file assumes a little-endian host (checked at compile time).
// Writes go to a temporary file renamed into place, so readers never see half a shard.
#include "core/token_shard.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace arch {

static_assert(std::endian::native == std::endian::little, "token shards are read as little-endian");

namespace {

struct ShardHeader {
    int32_t words[256];
};

// Opens path, reads and checks the header against the file size; leaves `in` after the header.
uint64_t open_and_check(const std::string& path, std::ifstream& in) {
    std::error_code ec;
    const auto file_bytes = std::filesystem::file_size(path, ec);
    if (ec) throw Error("token shard '" + path + "' cannot be read: " + ec.message());
    in.open(path, std::ios::binary);
    if (!in) throw Error("token shard '" + path + "' cannot be opened: " + std::strerror(errno));
    if (file_bytes < kTokenShardHeaderBytes)
        throw Error("token shard '" + path + "' is truncated: expected a " + std::to_string(kTokenShardHeaderBytes) +
                    "-byte header, file has " + std::to_string(file_bytes) + " bytes");
    ShardHeader h;
    in.read(reinterpret_cast<char*>(h.words), sizeof(h.words));
    if (!in) throw Error("token shard '" + path + "': reading the header failed");
    if (h.words[0] != kTokenShardMagic)
        throw Error("token shard '" + path + "' has magic " + std::to_string(h.words[0]) + ", expected " +
                    std::to_string(kTokenShardMagic) + " (an llm.c token shard)");
    if (h.words[1] != kTokenShardVersion)
        throw Error("token shard '" + path + "' has version " + std::to_string(h.words[1]) + ", expected " +
                    std::to_string(kTokenShardVersion));
    if (h.words[2] < 0)
        throw Error("token shard '" + path + "' is corrupt: negative token count " + std::to_string(h.words[2]));
    const uint64_t count = static_cast<uint32_t>(h.words[2]);
    const uint64_t expected = kTokenShardHeaderBytes + 2 * count;
    if (file_bytes != expected)
        throw Error("token shard '" + path + "' " + (file_bytes < expected ? "is truncated" : "has extra bytes") +
                    ": header says " + std::to_string(count) + " tokens (" + std::to_string(expected) +
                    " bytes), file has " + std::to_string(file_bytes) + " bytes");
    return count;
}

}  // namespace

void write_token_shard(const std::string& path, std::span<const uint16_t> tokens) {
    if (tokens.size() > static_cast<size_t>(INT32_MAX))
        throw Error("token shard '" + path + "': " + std::to_string(tokens.size()) +
                    " tokens do not fit the int32 count of the header; split into smaller shards");
    ShardHeader h{};
    h.words[0] = kTokenShardMagic;
    h.words[1] = kTokenShardVersion;
    h.words[2] = static_cast<int32_t>(tokens.size());
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("token shard '" + tmp + "' cannot be created: " + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(h.words), sizeof(h.words));
        out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
        out.flush();
        if (!out) {
            out.close();
            std::remove(tmp.c_str());
            throw Error("token shard '" + tmp + "': writing " + std::to_string(tokens.size()) +
                        " tokens failed (disk full?)");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw Error("token shard: cannot rename '" + tmp + "' to '" + path + "': " + why);
    }
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
    std::ifstream in;
    const uint64_t count = open_and_check(path, in);
    std::vector<uint16_t> tokens(count);
    in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(2 * count));
    if (!in) throw Error("token shard '" + path + "': reading " + std::to_string(count) + " tokens failed");
    return tokens;
}

uint64_t read_token_shard_count(const std::string& path) {
    std::ifstream in;
    return open_and_check(path, in);
}

}  // namespace arch
