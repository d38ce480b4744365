// core/token_shard.cpp: llm.c token shard I/O with full validation of header and size, in both widths.
// Tokens are stored little-endian; this file assumes a little-endian host (checked at compile time).
// Writes go to a temporary file renamed into place, so readers never see half a shard.
#include "core/token_shard.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/bytes.h"
#include "core/error.h"

namespace arch {

static_assert(std::endian::native == std::endian::little, "token shards are read as little-endian");

namespace {

struct ShardHeader {
    int32_t words[256];
};

// Opens path, reads and checks the header against the file size; leaves `in` after the header.
TokenShardInfo open_and_check(const std::string& path, std::ifstream& in) {
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
    TokenShardInfo info;
    if (h.words[0] == kTokenShardMagic) {
        info.token_bytes = 2;
        if (h.words[1] != kTokenShardVersion)
            throw Error("token shard '" + path + "' has version " + std::to_string(h.words[1]) + ", expected " +
                        std::to_string(kTokenShardVersion) + " for magic " + std::to_string(kTokenShardMagic));
    } else if (h.words[0] == kTokenShard32Magic) {
        info.token_bytes = 4;
        if (h.words[1] != kTokenShard32Version)
            throw Error("token shard '" + path + "' has version " + std::to_string(h.words[1]) + ", expected " +
                        std::to_string(kTokenShard32Version) + " for magic " + std::to_string(kTokenShard32Magic));
    } else {
        throw Error("token shard '" + path + "' has magic " + std::to_string(h.words[0]) + ", expected " +
                    std::to_string(kTokenShardMagic) + " (uint16) or " + std::to_string(kTokenShard32Magic) +
                    " (uint32): an llm.c token shard");
    }
    if (h.words[2] < 0)
        throw Error("token shard '" + path + "' is corrupt: negative token count " + std::to_string(h.words[2]));
    info.tokens = static_cast<uint32_t>(h.words[2]);
    const uint64_t expected = kTokenShardHeaderBytes + static_cast<uint64_t>(info.token_bytes) * info.tokens;
    if (file_bytes != expected)
        throw Error("token shard '" + path + "' " + (file_bytes < expected ? "is truncated" : "has extra bytes") +
                    ": header says " + std::to_string(info.tokens) + " tokens (" + std::to_string(expected) +
                    " bytes), file has " + std::to_string(file_bytes) + " bytes");
    return info;
}

ShardHeader make_header(int token_bytes, uint64_t tokens) {
    ShardHeader h{};
    h.words[0] = token_bytes == 2 ? kTokenShardMagic : kTokenShard32Magic;
    h.words[1] = token_bytes == 2 ? kTokenShardVersion : kTokenShard32Version;
    h.words[2] = static_cast<int32_t>(tokens);
    return h;
}

}  // namespace

int token_bytes_for_vocab(int64_t vocab_size) {
    if (vocab_size <= 0) throw Error("token shard: a vocabulary of " + std::to_string(vocab_size) + " ids");
    if (vocab_size <= 65536) return 2;
    if (vocab_size <= (int64_t{1} << 32)) return 4;
    throw Error("token shard: a vocabulary of " + std::to_string(vocab_size) +
                " ids exceeds uint32, the widest token llm.c's shards hold");
}

TokenShardWriter::TokenShardWriter(std::string path, std::optional<uint64_t> tokens, int token_bytes)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), tokens_(tokens), token_bytes_(token_bytes) {
    if (token_bytes != 2 && token_bytes != 4)
        throw Error("token shard '" + path_ + "': tokens of " + std::to_string(token_bytes) + " bytes (2 or 4)");
    if (tokens && *tokens > static_cast<uint64_t>(INT32_MAX))
        throw Error("token shard '" + path_ + "': " + std::to_string(*tokens) +
                    " tokens do not fit the int32 count of the header; split into smaller shards");
    const ShardHeader h = make_header(token_bytes, tokens.value_or(0));
    out_.open(tmp_, std::ios::binary | std::ios::trunc);
    if (!out_) throw Error("token shard '" + tmp_ + "' cannot be created: " + std::strerror(errno));
    out_.write(reinterpret_cast<const char*>(h.words), sizeof(h.words));
}

TokenShardWriter::TokenShardWriter(std::string path, Reopen reopen, int token_bytes)
    : path_(std::move(path)), tmp_(path_ + ".tmp"), token_bytes_(token_bytes), written_(reopen.kept_tokens) {
    if (token_bytes != 2 && token_bytes != 4)
        throw Error("token shard '" + path_ + "': tokens of " + std::to_string(token_bytes) + " bytes (2 or 4)");
    const uint64_t keep = kTokenShardHeaderBytes + static_cast<uint64_t>(token_bytes) * reopen.kept_tokens;
    std::error_code ec;
    const uint64_t have = std::filesystem::file_size(tmp_, ec);
    if (ec || have < keep)
        throw Error("token shard '" + tmp_ + "' cannot be resumed: it holds " + (ec ? std::string("nothing") : std::to_string(have) + " bytes") +
                    ", " + std::to_string(keep) + " expected");
    std::filesystem::resize_file(tmp_, keep, ec);
    if (ec) throw Error("token shard '" + tmp_ + "' cannot be cut back to " + std::to_string(keep) + " bytes: " + ec.message());
    out_.open(tmp_, std::ios::binary | std::ios::in | std::ios::out);
    if (!out_) throw Error("token shard '" + tmp_ + "' cannot be opened: " + std::strerror(errno));
    out_.seekp(0, std::ios::end);
}

void TokenShardWriter::flush() {
    out_.flush();
    if (!out_) throw Error("token shard '" + tmp_ + "': writing failed (disk full?)");
}

TokenShardWriter::~TokenShardWriter() {
    if (finished_) return;
    out_.close();
    std::remove(tmp_.c_str());
}

void TokenShardWriter::count_more(uint64_t tokens) {
    const uint64_t limit = tokens_.value_or(static_cast<uint64_t>(INT32_MAX));
    if (written_ + tokens > limit)
        throw Error("token shard '" + path_ + "': more tokens appended than the " + std::to_string(limit) +
                    (tokens_ ? " declared" : " a header can count"));
    written_ += tokens;
}

void TokenShardWriter::append(std::span<const uint16_t> tokens) {
    if (token_bytes_ == 4) {
        std::vector<uint32_t> wide(tokens.begin(), tokens.end());
        return append(std::span<const uint32_t>(wide));
    }
    count_more(tokens.size());
    out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
}

void TokenShardWriter::append(std::span<const uint32_t> tokens) {
    if (token_bytes_ == 4) {
        count_more(tokens.size());
        out_.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size_bytes()));
        return;
    }
    narrow_.resize(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
        if (tokens[i] > 0xFFFF)
            throw Error("token shard '" + path_ + "': token id " + std::to_string(tokens[i]) +
                        " does not fit a uint16 shard; a vocabulary above 65,536 ids needs uint32 shards");
        narrow_[i] = static_cast<uint16_t>(tokens[i]);
    }
    append(std::span<const uint16_t>(narrow_));
}

void TokenShardWriter::append_bytes(std::span<const std::byte> bytes) {
    if (bytes.size() % static_cast<size_t>(token_bytes_) != 0)
        throw Error("token shard '" + path_ + "': " + std::to_string(bytes.size()) + " bytes are not whole " +
                    std::to_string(token_bytes_) + "-byte tokens");
    count_more(bytes.size() / static_cast<size_t>(token_bytes_));
    out_.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void TokenShardWriter::finish() {
    if (tokens_ && written_ != *tokens_)
        throw Error("token shard '" + path_ + "': " + std::to_string(written_) + " tokens written, " +
                    std::to_string(*tokens_) + " declared");
    if (!tokens_) {
        const ShardHeader h = make_header(token_bytes_, written_);
        out_.seekp(0);
        out_.write(reinterpret_cast<const char*>(h.words), sizeof(h.words));
    }
    out_.flush();
    if (!out_) throw Error("token shard '" + tmp_ + "': writing " + std::to_string(written_) + " tokens failed (disk full?)");
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

void write_token_shard(const std::string& path, std::span<const uint32_t> tokens, int token_bytes) {
    TokenShardWriter out(path, tokens.size(), token_bytes);
    out.append(tokens);
    out.finish();
}

TokenShardInfo read_token_shard_info(const std::string& path) {
    std::ifstream in;
    return open_and_check(path, in);
}

uint64_t read_token_shard_count(const std::string& path) { return read_token_shard_info(path).tokens; }

namespace {

// Tokens [offset, offset + count) of a shard opened and checked by open_and_check, as its bytes.
std::vector<std::byte> read_range(std::ifstream& in, const TokenShardInfo& info, const std::string& path, uint64_t offset,
                                uint64_t count) {
    if (offset > info.tokens || count > info.tokens - offset)
        throw Error("token shard '" + path + "' has " + std::to_string(info.tokens) + " tokens; tokens " +
                    std::to_string(offset) + ".." + std::to_string(offset + count) + " are past its end");
    const uint64_t width = static_cast<uint64_t>(info.token_bytes);
    std::vector<std::byte> bytes(width * count);
    in.seekg(static_cast<std::streamoff>(kTokenShardHeaderBytes + width * offset));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in) throw Error("token shard '" + path + "': reading " + std::to_string(count) + " tokens failed");
    return bytes;
}

}  // namespace

std::vector<std::byte> read_token_bytes(const std::string& path, uint64_t offset, uint64_t count) {
    std::ifstream in;
    const TokenShardInfo info = open_and_check(path, in);
    return read_range(in, info, path, offset, count);
}

std::vector<uint16_t> read_token_shard(const std::string& path) {
    std::ifstream in;
    const TokenShardInfo info = open_and_check(path, in);
    if (info.token_bytes != 2) throw Error("token shard '" + path + "' holds uint32 tokens, expected a uint16 shard");
    const std::vector<std::byte> bytes = read_range(in, info, path, 0, info.tokens);
    std::vector<uint16_t> tokens(info.tokens);
    if (!bytes.empty()) std::memcpy(tokens.data(), bytes.data(), bytes.size());
    return tokens;
}

std::vector<uint32_t> read_token_ids(const std::string& path) {
    std::ifstream in;
    const TokenShardInfo info = open_and_check(path, in);
    const std::vector<std::byte> bytes = read_range(in, info, path, 0, info.tokens);
    std::vector<uint32_t> ids(info.tokens);
    widen_tokens(bytes, info.token_bytes, ids.data());
    return ids;
}

void widen_tokens(std::span<const std::byte> bytes, int token_bytes, uint32_t* out) {
    const size_t n = bytes.size() / static_cast<size_t>(token_bytes);
    if (token_bytes == 4) {
        if (n > 0) std::memcpy(out, bytes.data(), 4 * n);
        return;
    }
    for (size_t i = 0; i < n; i++) out[i] = load_le<uint16_t>(bytes.data() + 2 * i);
}

}  // namespace arch
