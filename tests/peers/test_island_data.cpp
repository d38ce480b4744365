// tests/peers/test_island_data.cpp: the data manifest (hashes checked against coreutils' b2sum, a
// second BLAKE2b), the assignment rule, and IslandData: found under --data by hash, fetched chunks
// checked and kept for a resume, a wrong-content file of the right name ignored, the island's shard.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "core/data_manifest.h"
#include "core/error.h"
#include "core/token_shard.h"
#include "peers/island_data.h"
#include "tests/core/temp_dir.h"

namespace fs = std::filesystem;
using namespace arch;
using Catch::Matchers::Contains;

namespace {

std::vector<uint16_t> random_tokens(std::size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint16_t> t(n);
    for (uint16_t& x : t) x = static_cast<uint16_t>(rng());
    return t;
}

std::string shell(const std::string& cmd) {
    std::string out;
    FILE* p = ::popen(cmd.c_str(), "r");
    REQUIRE(p);
    char buf[256];
    while (std::fgets(buf, sizeof(buf), p)) out += buf;
    ::pclose(p);
    return out;
}

// Tokens as a uint16 shard stores them, which is how chunks travel.
std::vector<std::byte> bytes_of(const std::vector<uint16_t>& tokens) {
    std::vector<std::byte> b(2 * tokens.size());
    if (!b.empty()) std::memcpy(b.data(), tokens.data(), b.size());
    return b;
}

// What coreutils' b2sum makes of the bytes `producer` writes to its stdout.
std::string b2sum(const std::string& producer) { return shell(producer + " | b2sum -l 256").substr(0, 64); }

struct DataSet {
    TempDir dir;
    std::vector<std::vector<uint16_t>> tokens = {random_tokens(10'000, 1), random_tokens(7'500, 2)};
    DataSet() {
        fs::create_directories(dir.file("host"));
        write_token_shard(dir.file("host/train_000.bin"), tokens[0]);
        write_token_shard(dir.file("host/train_001.bin"), tokens[1]);
    }
    DataManifest manifest() const { return build_manifest(dir.file("host/train_*.bin"), 1024); }
};

protocol::DataAssignment assignment(const DataManifest& m, int islands, int island) {
    protocol::DataAssignment a;
    a.shards = m.shards;
    a.chunks = assign_chunks(m, islands, island, DataAssign::interleaved, 1);
    return a;
}

std::vector<uint16_t> expected_island(const DataSet& d, const protocol::DataAssignment& a) {
    std::vector<uint16_t> out;
    for (const DataChunk& c : a.chunks)
        out.insert(out.end(), d.tokens[c.shard].begin() + static_cast<long>(c.offset),
                   d.tokens[c.shard].begin() + static_cast<long>(c.offset + c.tokens));
    return out;
}

}  // namespace

TEST_CASE("the manifest's hashes are BLAKE2b-256, as b2sum computes them, of the file and of each chunk") {
    DataSet d;
    const DataManifest m = d.manifest();
    REQUIRE(m.shards.size() == 2);
    CHECK(m.shards[0].name == "train_000.bin");
    CHECK(m.shards[0].tokens == 10'000);
    CHECK(m.shards[0].hash == b2sum("cat " + d.dir.file("host/train_000.bin")));
    CHECK(m.shards[1].hash == b2sum("cat " + d.dir.file("host/train_001.bin")));
    CHECK(m.chunks.size() == 10 + 8);  // 1024-token chunks, the last of each shard shorter
    CHECK(m.chunks[9].tokens == 10'000 - 9 * 1024);
    // Chunk 3 of shard 1: its tokens' bytes, cut out of the file with dd, hashed by b2sum.
    const DataChunk& c = m.chunks[10 + 3];
    CHECK(c.shard == 1);
    CHECK(c.offset == 3 * 1024);
    CHECK(c.hash == b2sum("dd if=" + d.dir.file("host/train_001.bin") + " bs=1 skip=" + std::to_string(1024 + 2 * c.offset) +
                          " count=" + std::to_string(2 * c.tokens) + " status=none"));
}

TEST_CASE("islands get disjoint chunks that cover the data: interleaved, or contiguous") {
    DataSet d;
    const DataManifest m = d.manifest();
    for (DataAssign how : {DataAssign::interleaved, DataAssign::contiguous}) {
        std::set<std::string> seen;
        uint64_t tokens = 0;
        for (int i = 0; i < 3; ++i)
            for (const DataChunk& c : assign_chunks(m, 3, i, how, 1)) {
                CHECK(seen.insert(std::to_string(c.shard) + ":" + std::to_string(c.offset)).second);
                tokens += c.tokens;
            }
        CHECK(tokens == 17'500);
    }
    const std::vector<DataChunk> inter = assign_chunks(m, 3, 1, DataAssign::interleaved, 1);
    CHECK(inter[0].offset == 1024);  // global chunks 1, 4, 7, ...
    CHECK(inter[1].offset == 4 * 1024);
    const std::vector<DataChunk> cont = assign_chunks(m, 3, 0, DataAssign::contiguous, 1);
    CHECK(cont.size() == 6);
    CHECK(cont.back().offset == 5 * 1024);
    CHECK_THROWS_WITH(assign_chunks(m, 3, 0, DataAssign::interleaved, 10'000), Contains("too small for 3 islands"));
    CHECK(choose_chunk_tokens(100'000'000, 4) == 100'000'000 / 256);
    CHECK(choose_chunk_tokens(1000, 4) == 1024);
    CHECK(choose_chunk_tokens(1ull << 40, 2) == kMaxChunkTokens);
}

TEST_CASE("IslandData finds shards under --data by hash, whatever their names, and lays out the island") {
    DataSet d;
    const protocol::DataAssignment a = assignment(d.manifest(), 2, 1);
    fs::create_directories(d.dir.file("mine"));
    fs::copy_file(d.dir.file("host/train_000.bin"), d.dir.file("mine/first.bin"));
    fs::copy_file(d.dir.file("host/train_001.bin"), d.dir.file("mine/second.bin"));
    std::vector<std::string> lines;
    IslandData data(a, d.dir.file("work"), {d.dir.file("mine")}, [&](const std::string& l) { lines.push_back(l); });
    CHECK(data.complete());
    const std::string shard = data.assemble();
    CHECK(read_token_shard(shard) == expected_island(d, a));
    CHECK(fs::path(shard).parent_path() == fs::path(d.dir.file("work/data")));
}

TEST_CASE("IslandData keeps only chunks that match their hash, resumes a fetch, and ignores a look-alike") {
    DataSet d;
    const protocol::DataAssignment a = assignment(d.manifest(), 2, 0);
    fs::create_directories(d.dir.file("mine"));
    write_token_shard(d.dir.file("mine/train_000.bin"), random_tokens(10'000, 42));  // the right name, other content
    std::vector<std::string> lines;
    auto log = [&](const std::string& l) { lines.push_back(l); };
    {
        IslandData data(a, d.dir.file("work"), {d.dir.file("mine")}, log);
        REQUIRE(lines.size() == 1);
        CHECK_THAT(lines[0], Contains("ignoring") && Contains("named like the run's shard train_000.bin"));
        CHECK(data.missing_chunks() == a.chunks.size());
        CHECK_THAT(data.describe_missing(), Contains("train_000.bin: BLAKE2b-256 " + a.shards[0].hash) &&
                                                Contains("train_001.bin: BLAKE2b-256 " + a.shards[1].hash));
        const protocol::DataRequest r = data.next_request();
        REQUIRE(r.chunks.size() == a.chunks.size());
        // A chunk whose tokens do not match: refused by shard name, nothing stored.
        std::vector<uint16_t> wrong(a.chunks[0].tokens, 7);
        CHECK_THROWS_WITH(data.store(0, bytes_of(wrong)), Contains("shard train_000.bin") && Contains("does not match"));
        CHECK(data.missing_chunks() == a.chunks.size());
        CHECK_THROWS_WITH(data.store(static_cast<uint32_t>(a.chunks.size()), bytes_of(wrong)), Contains("not in this island"));
        // Two right chunks, then the process "stops".
        const std::vector<uint16_t> want = expected_island(d, a);
        for (uint32_t i = 0; i < 2; ++i) {
            const DataChunk& c = a.chunks[i];
            uint64_t at = 0;
            for (uint32_t j = 0; j < i; ++j) at += a.chunks[j].tokens;
            data.store(i, bytes_of(std::vector<uint16_t>(want.begin() + static_cast<long>(at), want.begin() + static_cast<long>(at + c.tokens))));
        }
        CHECK(data.missing_chunks() == a.chunks.size() - 2);
    }
    IslandData again(a, d.dir.file("work"), {}, log);
    CHECK(again.missing_chunks() == a.chunks.size() - 2);  // resumed: the two verified chunks stay
    CHECK_THAT(lines.back(), Contains("2 chunks already fetched"));
    const std::vector<uint16_t> want = expected_island(d, a);
    uint64_t at = 0;
    for (uint32_t i = 0; i < a.chunks.size(); ++i) {
        if (i >= 2) again.store(i, bytes_of(std::vector<uint16_t>(want.begin() + static_cast<long>(at),
                                                                  want.begin() + static_cast<long>(at + a.chunks[i].tokens))));
        at += a.chunks[i].tokens;
    }
    REQUIRE(again.complete());
    CHECK(read_token_shard(again.assemble()) == want);
}
