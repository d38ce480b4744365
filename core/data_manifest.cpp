// core/data_manifest.cpp: manifests (libsodium's BLAKE2b), chunking and the assignment rule.
#include "core/data_manifest.h"

#include <glob.h>
#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/token_shard.h"

namespace arch {

namespace {

constexpr std::size_t kHashBytes = 32;

std::string hex(const unsigned char* h) {
    static const char* digits = "0123456789abcdef";
    std::string out(2 * kHashBytes, '0');
    for (std::size_t i = 0; i < kHashBytes; ++i) {
        out[2 * i] = digits[h[i] >> 4];
        out[2 * i + 1] = digits[h[i] & 15];
    }
    return out;
}

void init_sodium() {
    if (sodium_init() < 0) throw Error("libsodium failed to initialise");
}

}  // namespace

std::vector<std::string> shard_paths(const std::string& pattern) {
    glob_t g{};
    std::vector<std::string> out;
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
        for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (out.empty()) throw Error("no training shards match '" + pattern + "'");
    return out;  // glob sorts by name
}

uint64_t count_tokens(const std::vector<std::string>& paths) {
    uint64_t n = 0;
    for (const std::string& p : paths) n += read_token_shard_count(p);
    return n;
}

uint64_t DataManifest::total_tokens() const {
    uint64_t n = 0;
    for (const ManifestShard& s : shards) n += s.tokens;
    return n;
}

const EnumNames<DataAssign>& data_assign_names() {
    static const EnumNames<DataAssign> names{{"interleaved", DataAssign::interleaved}, {"contiguous", DataAssign::contiguous}};
    return names;
}

DataAssign parse_data_assign(const std::string& name) { return parse_named(data_assign_names(), name, "data.assign"); }

uint64_t choose_chunk_tokens(uint64_t total_tokens, int islands) {
    const uint64_t per = total_tokens / (64 * static_cast<uint64_t>(std::max(1, islands)));
    return std::clamp<uint64_t>(per, 1024, kMaxChunkTokens);
}

std::string hash_file(const std::string& path) {
    init_sodium();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
    crypto_generichash_state st;
    crypto_generichash_init(&st, nullptr, 0, kHashBytes);
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const std::streamsize n = in.gcount();
        if (n > 0) crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(buf.data()), static_cast<unsigned long long>(n));
    }
    if (in.bad()) throw Error("reading '" + path + "' failed");
    unsigned char h[kHashBytes];
    crypto_generichash_final(&st, h, kHashBytes);
    return hex(h);
}

std::string hash_bytes(const void* data, std::size_t n) {
    init_sodium();
    unsigned char h[kHashBytes];
    crypto_generichash(h, kHashBytes, static_cast<const unsigned char*>(data), n, nullptr, 0);
    return hex(h);
}

std::string hash_tokens(const std::vector<uint16_t>& tokens) { return hash_bytes(tokens.data(), 2 * tokens.size()); }

DataManifest build_manifest(const std::string& pattern, uint64_t chunk_tokens) {
    if (chunk_tokens == 0 || chunk_tokens > kMaxChunkTokens)
        throw Error("build_manifest: chunk_tokens must be in 1.." + std::to_string(kMaxChunkTokens));
    init_sodium();
    const std::vector<std::string> paths = shard_paths(pattern);
    DataManifest m;
    for (const std::string& path : paths) {
        ManifestShard s;
        s.name = std::filesystem::path(path).filename().string();
        const TokenShardInfo info = read_token_shard_info(path);  // header and size checked
        s.tokens = info.tokens;
        if (m.shards.empty()) m.token_bytes = info.token_bytes;
        if (info.token_bytes != m.token_bytes)
            throw Error("token shard '" + path + "' holds uint" + std::to_string(8 * info.token_bytes) + " tokens but '" +
                        paths.front() + "' holds uint" + std::to_string(8 * m.token_bytes) +
                        ": a data set's shards must share one width (prepare them with one tokenizer)");
        for (const ManifestShard& other : m.shards)
            if (other.name == s.name)
                throw Error("two training shards are named '" + s.name + "' ('" + pattern + "'): shard names must be unique");
        // One pass over the file: its bytes feed the whole-file hash and, chunk by chunk, the chunk hashes.
        std::ifstream in(path, std::ios::binary);
        if (!in) throw Error("cannot open '" + path + "': " + std::strerror(errno));
        crypto_generichash_state file_hash;
        crypto_generichash_init(&file_hash, nullptr, 0, kHashBytes);
        std::vector<char> header(kTokenShardHeaderBytes);
        in.read(header.data(), static_cast<std::streamsize>(header.size()));
        crypto_generichash_update(&file_hash, reinterpret_cast<const unsigned char*>(header.data()), header.size());
        const uint32_t index = static_cast<uint32_t>(m.shards.size());
        std::vector<std::byte> bytes;
        for (uint64_t at = 0; at < s.tokens; at += chunk_tokens) {
            DataChunk c;
            c.shard = index;
            c.offset = at;
            c.tokens = std::min(chunk_tokens, s.tokens - at);
            bytes.resize(static_cast<std::size_t>(info.token_bytes) * c.tokens);
            in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            if (!in) throw Error("token shard '" + path + "': reading tokens " + std::to_string(at) + ".. failed");
            crypto_generichash_update(&file_hash, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
            c.hash = hash_bytes(bytes.data(), bytes.size());
            m.chunks.push_back(std::move(c));
        }
        unsigned char h[kHashBytes];
        crypto_generichash_final(&file_hash, h, kHashBytes);
        s.hash = hex(h);
        m.shards.push_back(std::move(s));
    }
    return m;
}

std::vector<DataChunk> assign_chunks(const DataManifest& m, int islands, int island, DataAssign how, uint64_t min_tokens) {
    if (islands <= 0 || island < 0 || island >= islands)
        throw Error("assign_chunks: island " + std::to_string(island) + " of " + std::to_string(islands));
    const std::size_t n = m.chunks.size(), k = static_cast<std::size_t>(islands), i = static_cast<std::size_t>(island);
    std::vector<DataChunk> out;
    if (how == DataAssign::interleaved) {
        for (std::size_t g = i; g < n; g += k) out.push_back(m.chunks[g]);
    } else {
        for (std::size_t g = n * i / k; g < n * (i + 1) / k; ++g) out.push_back(m.chunks[g]);
    }
    uint64_t tokens = 0;
    for (const DataChunk& c : out) tokens += c.tokens;
    if (tokens < min_tokens)
        throw Error("the training data (" + std::to_string(m.total_tokens()) + " tokens in " + std::to_string(n) +
                    " chunks) is too small for " + std::to_string(islands) + " islands: island " + std::to_string(island) +
                    " would get " + std::to_string(tokens) + " tokens, and one batch needs " + std::to_string(min_tokens));
    return out;
}

}  // namespace arch
