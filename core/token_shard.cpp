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

TokenShardWriter::TokenShardWriter(std::string path, uint64_t tokens)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), tokens_(tokens) {
    if (tokens > static_cast<uint64_t>(INT32_MAX))
        throw Error("token shard '" + path_ + "': " + std::to_string(tokens) +
                    " tokens do not fit the int32 count of the header; split into smaller shards");
    ShardHeader h{};
    h.words[0] = kTokenShardMagic;
    h.words[1] = kTokenShardVersion;
    h.words[2] = static_cast<int32_t>(tokens);
    out_.open(tmp_, std::ios::binary | std::ios::trunc);
    if (!out_) throw Error("token shard '" + tmp_ + "' cannot be created: " + std::strerror(errno));
    out_.write(reinterpret_cast<const char*>(h.words), sizeof(h.words));
}

TokenShardWriter::~TokenShardWriter() {
    if (finished_) return;
    out_.close();
    std::remove(tmp_.c_str());
}

void TokenShardWriter::append(std::span<const uint16_t> tokens) {
    if (written_ + tokens.size() > tokens_)
        throw Error("token shard '" + path_ + "': more tokens appended than the " + std::to_string(tokens_) + " declared");
    out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
    written_ += tokens.size();
}

void TokenShardWriter::finish() {
    if (written_ != tokens_)
        throw Error("token shard '" + path_ + "': " + std::to_string(written_) + " tokens written, " +
                    std::to_string(tokens_) + " declared");
    out_.flush();
    if (!out_) throw Error("token shard '" + tmp_ + "': writing " + std::to_string(tokens_) + " tokens failed (disk full?)");
    out_.close();
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp_.c_str());
        throw Error("token shard: cannot rename '" + tmp_ + "' to '" + path_ + "': " + why);
    }
    finished_ = true;
}

void write_token_shard(const std::string& path, std::span<const uint16_t> tokens) {
    TokenShardWriter out(path, tokens.size());
    out.append(tokens);
    out.finish();
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
    std::ifstream in;
    const uint64_t count = open_and_check(path, in);
    std::vector<uint16_t> tokens(count);
    in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(2 * count));
    if (!in) throw Error("token shard '" + path + "': reading " + std::to_string(count) + " tokens failed");
    return tokens;
}

std::vector<uint16_t> read_token_range(const std::string& path, uint64_t offset, uint64_t count) {
    std::ifstream in;
    const uint64_t total = open_and_check(path, in);
    if (offset > total || count > total - offset)
        throw Error("token shard '" + path + "' has " + std::to_string(total) + " tokens; tokens " + std::to_string(offset) +
                    ".." + std::to_string(offset + count) + " are past its end");
    std::vector<uint16_t> tokens(count);
    in.seekg(static_cast<std::streamoff>(kTokenShardHeaderBytes + 2 * offset));
    in.read(reinterpret_cast<char*>(tokens.data()), static_cast<std::streamsize>(2 * count));
    if (!in) throw Error("token shard '" + path + "': reading " + std::to_string(count) + " tokens failed");
    return tokens;
}

uint64_t read_token_shard_count(const std::string& path) {
    std::ifstream in;
    return open_and_check(path, in);
}

}  // namespace arch
