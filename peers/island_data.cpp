// peers/island_data.cpp: finding, fetching, checking and laying out an island's chunks.
#include "peers/island_data.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/file_io.h"
#include "core/token_shard.h"

namespace fs = std::filesystem;

namespace arch {

namespace {

// A stored chunk's bytes, or nothing when the file is not exactly `bytes` long.
std::vector<std::byte> read_chunk_file(const std::string& path, uint64_t bytes) {
    std::vector<std::byte> out = read_file(path, bytes + 1);
    if (out.size() != bytes) return {};
    return out;
}

bool chunk_matches(const std::vector<std::byte>& bytes, const DataChunk& c, int token_bytes) {
    return bytes.size() == static_cast<uint64_t>(token_bytes) * c.tokens && hash_bytes(bytes.data(), bytes.size()) == c.hash;
}

std::string human_bytes(uint64_t b) {
    char s[32];
    if (b >= (1u << 20)) std::snprintf(s, sizeof(s), "%.1f MiB", static_cast<double>(b) / (1 << 20));
    else std::snprintf(s, sizeof(s), "%.1f KiB", static_cast<double>(b) / 1024);
    return s;
}

}  // namespace

IslandData::IslandData(protocol::DataAssignment assignment, const std::string& workdir, const std::vector<std::string>& data_dirs,
                       std::function<void(const std::string&)> log)
    : a_(std::move(assignment)), dir_(workdir + "/data"), log_(std::move(log)) {
    if (workdir.empty()) throw Error("a peer needs a working directory for its data (--workdir)");
    fs::create_directories(dir_ + "/chunks");
    std::map<uint64_t, std::vector<uint32_t>> by_tokens;  // only files of a manifest shard's size are hashed
    for (uint32_t s = 0; s < a_.shards.size(); ++s) by_tokens[a_.shards[s].tokens].push_back(s);
    std::vector<bool> needed(a_.shards.size(), false);
    for (const DataChunk& c : a_.chunks) needed[c.shard] = true;
    for (const std::string& folder : data_dirs) {
        std::error_code ec;
        if (!fs::is_directory(folder, ec)) throw Error("--data '" + folder + "' is not a folder");
        std::vector<fs::path> files;
        for (const fs::directory_entry& e : fs::directory_iterator(folder, ec))
            if (e.is_regular_file() && e.path().extension() == ".bin") files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const fs::path& file : files) {
            const std::string name = file.filename().string();
            std::string hash;
            uint64_t count = 0;
            try {
                const TokenShardInfo info = read_token_shard_info(file.string());
                count = info.tokens;
                if (by_tokens.count(count) && info.token_bytes == a_.token_bytes) hash = hash_file(file.string());
            } catch (const Error&) {
                continue;  // not a token shard
            }
            bool matched = false;
            for (uint32_t s : by_tokens[count])
                if (a_.shards[s].hash == hash) {
                    matched = true;
                    if (needed[s] && !local_.count(s)) local_[s] = file.string();
                }
            if (matched) continue;
            for (const ManifestShard& s : a_.shards)
                if (s.name == name)
                    log_("ignoring " + file.string() + ": it is named like the run's shard " + s.name +
                         " but holds other content (" + std::to_string(count) + " tokens, hash " +
                         (hash.empty() ? std::string("not computed") : hash.substr(0, 16)) + "; the run's has " +
                         std::to_string(s.tokens) + " tokens, hash " + s.hash.substr(0, 16) + ")");
        }
    }
    uint32_t fetched = 0;
    for (uint32_t i = 0; i < a_.chunks.size(); ++i) {
        const DataChunk& c = a_.chunks[i];
        if (local_.count(c.shard)) continue;
        const std::string path = chunk_file(c);
        if (file_exists(path)) {
            if (chunk_matches(read_chunk_file(path, a_.token_bytes * c.tokens), c, a_.token_bytes)) {
                ++fetched;
                continue;
            }
            fs::remove(path);  // a damaged cache entry is fetched again
        }
        missing_.push_back(i);
    }
    for (const auto& [s, path] : local_) log_("data: shard " + a_.shards[s].name + " found in " + path);
    if (fetched > 0) log_("data: " + std::to_string(fetched) + " chunks already fetched in " + dir_ + "/chunks");
}

std::string IslandData::chunk_file(const DataChunk& c) const { return dir_ + "/chunks/" + c.hash + ".tokens"; }

std::string IslandData::shard_label(const DataChunk& c) const {
    return "shard " + a_.shards[c.shard].name + " (hash " + a_.shards[c.shard].hash.substr(0, 16) + "), tokens " +
           std::to_string(c.offset) + ".." + std::to_string(c.offset + c.tokens);
}

uint64_t IslandData::tokens() const {
    uint64_t n = 0;
    for (const DataChunk& c : a_.chunks) n += c.tokens;
    return n;
}

uint64_t IslandData::bytes() const { return a_.token_bytes * tokens(); }

uint64_t IslandData::missing_bytes() const {
    uint64_t n = 0;
    for (uint32_t i : missing_) n += a_.chunks[i].tokens;
    return a_.token_bytes * n;
}

protocol::DataRequest IslandData::next_request() const {
    protocol::DataRequest r;
    uint64_t tokens = 0;
    for (uint32_t i : missing_) {
        if (r.chunks.size() >= protocol::kMaxRequestChunks || (!r.chunks.empty() && tokens + a_.chunks[i].tokens > protocol::kMaxReplyTokens))
            break;
        r.chunks.push_back(i);
        tokens += a_.chunks[i].tokens;
    }
    return r;
}

void IslandData::store(uint32_t index, const std::vector<std::byte>& bytes) {
    if (index >= a_.chunks.size()) throw Error("data: chunk " + std::to_string(index) + " is not in this island's assignment");
    const auto it = std::find(missing_.begin(), missing_.end(), index);
    if (it == missing_.end()) return;  // a second copy (a request sent again after a reconnect)
    const DataChunk& c = a_.chunks[index];
    if (!chunk_matches(bytes, c, a_.token_bytes))
        throw Error("data from the host for " + shard_label(c) + " does not match the run's manifest (" +
                    std::to_string(bytes.size()) + " bytes received, " + std::to_string(c.tokens) + " tokens of " +
                    std::to_string(a_.token_bytes) + " bytes expected): the host's copy differs from what it "
                    "described; nothing of it is used");
    write_file_atomic(chunk_file(c), bytes);
    missing_.erase(it);
}

std::string IslandData::describe_missing() const {
    std::map<uint32_t, uint64_t> tokens_of;
    for (uint32_t i : missing_) tokens_of[a_.chunks[i].shard] += a_.chunks[i].tokens;
    std::string out;
    for (const auto& [s, tokens] : tokens_of) {
        const ManifestShard& m = a_.shards[s];
        out += (out.empty() ? " " : "; ") + m.name + ": BLAKE2b-256 " + m.hash + ", " + std::to_string(m.tokens) + " tokens (" +
               human_bytes(kTokenShardHeaderBytes + a_.token_bytes * m.tokens) + "); this island needs " + std::to_string(tokens) +
               " of its tokens";
    }
    return out;
}

std::string IslandData::assemble() {
    if (!complete()) throw Error("data: " + std::to_string(missing_.size()) + " chunks are still missing");
    std::string ids;
    for (const DataChunk& c : a_.chunks) ids += c.hash;
    const std::string path = dir_ + "/island-" + hash_bytes(ids.data(), ids.size()).substr(0, 16) + ".bin";
    const uint64_t total = tokens();
    try {
        if (file_exists(path)) {
            const TokenShardInfo have = read_token_shard_info(path);
            if (have.tokens == total && have.token_bytes == a_.token_bytes) return path;
        }
    } catch (const Error&) {
    }
    TokenShardWriter out(path, total, a_.token_bytes);
    for (const DataChunk& c : a_.chunks) {
        const auto local = local_.find(c.shard);
        const std::vector<std::byte> t = local != local_.end() ? read_token_bytes(local->second, c.offset, c.tokens)
                                                             : read_chunk_file(chunk_file(c), a_.token_bytes * c.tokens);
        if (!chunk_matches(t, c, a_.token_bytes))
            throw Error("data: " + shard_label(c) + " in " + (local != local_.end() ? local->second : chunk_file(c)) +
                        " changed since it was checked; nothing of it is used");
        out.append_bytes(t);
    }
    out.finish();
    return path;
}

}  // namespace arch
