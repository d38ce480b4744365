// tests/peers/test_across_machines.cpp: a host and peers that share no files, on loopback. Each node
// runs in its own folder; the host's run.toml names its data with paths relative to the host's
// folder, which do not resolve from a peer's. Peers get their island's chunks from their own --data
// copy (matched by hash, under another name) or from the host, and bad data is refused by name.
// Shards of uint32 tokens (a vocabulary above 65,536 ids) travel and train the same way.
// (The same over separate network namespaces and shaped links: tests/wan.)
#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include "core/data_manifest.h"
#include "core/token_shard.h"
#include "tests/peers/run_fixture.h"

namespace fs = std::filesystem;
using namespace arch;
using namespace arch::test;
using Catch::Matchers::Contains;

namespace {

std::vector<uint16_t> random_tokens(std::size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint16_t> t(n);
    for (uint16_t& x : t) x = static_cast<uint16_t>(rng() % 256);
    return t;
}

void write_shard(const std::string& path, const std::vector<uint16_t>& tokens, int token_bytes) {
    write_token_shard(path, std::vector<uint32_t>(tokens.begin(), tokens.end()), token_bytes);
}

// A host folder (run.toml, its shards under shards/, token_bytes wide) and one folder per peer.
struct Machines {
    TempDir dir;
    int port = free_port();
    std::string host_dir = dir.file("host-node");

    explicit Machines(int islands, bool serve = true, int rounds = 2, int token_bytes = 2) {
        fs::create_directories(host_dir + "/shards");
        write_shard(host_dir + "/shards/train_000.bin", random_tokens(40'000, 1), token_bytes);
        write_shard(host_dir + "/shards/train_001.bin", random_tokens(30'000, 2), token_bytes);
        write_shard(host_dir + "/shards/val_000.bin", random_tokens(5'000, 3), token_bytes);
        write_file(host_dir + "/run.toml",
                   "[run]\nname = \"apart\"\nrounds = " + std::to_string(rounds) + "\nislands = " + std::to_string(islands) +
                       "\nbind = \"tcp://127.0.0.1:" + std::to_string(port) +
                       "\"\ncheckpoint_dir = \"ckpt\"\n"
                       "[model]\nconfig = \"tiny\"\nlayers = 1\nchannels = 32\nheads = 2\nmax_seq_len = 16\nvocab = 256\n"
                       "[data]\ntrain = \"shards/train_*.bin\"\nval = \"shards/val_000.bin\"\nserve = " +
                       std::string(serve ? "true" : "false") +
                       "\n[inner]\nsteps_per_round = 3\nbatch = 2\nseq_len = 16\nwarmup = 1\nval_batches = 2\n"
                       "[wire]\ncodec = \"fp32\"\n"
                       "[deadlines]\njoin_timeout_s = 60\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
        for (int i = 1; i <= islands; ++i) {
            fs::create_directories(peer_dir(i));
            Process kg({"keygen", "--out", peer_dir(i) + "/node.key"}, dir.file("setup.log"));
            REQUIRE(kg.wait(30) == 0);
            // The invite is made on the host's side and handed to the peer: a file of its own.
            Process inv({"invite", "--config", "run.toml", "--peer-key", peer_dir(i) + "/node.key.pub", "--name",
                         "peer-" + std::to_string(i), "--out", peer_dir(i) + "/run.invite"},
                        dir.file("setup.log"), kEnv, host_dir);
            REQUIRE(inv.wait(30) == 0);
        }
    }
    std::string peer_dir(int i) const { return dir.file("peer-node-" + std::to_string(i)); }
    // Each node writes its events into its own folder (node.events).
    std::unique_ptr<Process> host() {
        auto p = std::make_unique<Process>(std::vector<std::string>{"host", "--config", "run.toml", "--events", "node.events"},
                                           dir.file("host.log"), kEnv, host_dir);
        p->watch_events(host_dir + "/node.events");
        return p;
    }
    std::unique_ptr<Process> peer(int i, std::vector<std::string> extra = {}) {
        std::vector<std::string> args = {"peer", "--invite", "run.invite", "--key", "node.key", "--name",
                                         "peer-" + std::to_string(i), "--workdir", "work", "--events", "node.events"};
        args.insert(args.end(), extra.begin(), extra.end());
        auto p = std::make_unique<Process>(args, dir.file("peer-" + std::to_string(i) + ".log"), kEnv, peer_dir(i));
        p->watch_events(peer_dir(i) + "/node.events");
        return p;
    }
    std::string logs(std::vector<std::unique_ptr<Process>>& peers, Process& host) {
        std::string all = "--- host\n" + host.log();
        for (std::size_t i = 0; i < peers.size(); ++i) all += "\n--- peer " + std::to_string(i + 1) + "\n" + peers[i]->log();
        return all;
    }
};

// A host and `islands` peers on shards of token_bytes-wide tokens: every peer fetches its chunks, matches
// the host's θ hash every round, and trains on one island shard of that width; together the islands'
// shards are the whole data set.
void fetch_and_train(int islands, int token_bytes) {
    Machines m(islands, true, 2, token_bytes);
    auto host = m.host();
    std::vector<std::unique_ptr<Process>> peers;
    for (int i = 1; i <= islands; ++i) peers.push_back(m.peer(i));
    if (host->wait(240) != 0) FAIL(m.logs(peers, *host));
    for (auto& p : peers) CHECK(p->wait(30) == 0);
    INFO(m.logs(peers, *host));
    CHECK(host->count({.kind = "finished", .round = 2}) == 1);
    uint64_t island_tokens = 0;
    for (int i = 1; i <= islands; ++i) {
        const std::string log = peers[i - 1]->log();
        CHECK(log.find("data: fetching") != std::string::npos);
        CHECK(peers[i - 1]->count({.kind = "round_applied"}) == 2);  // the θ hash, every round
        CHECK(peers[i - 1]->count({.kind = "theta_differs"}) == 0);
        CHECK_FALSE(fs::exists(m.peer_dir(i) + "/shards"));  // nothing of the host's layout appears here
        CHECK(fs::exists(m.peer_dir(i) + "/work/peer.log"));
        int shards = 0;
        for (const auto& e : fs::directory_iterator(m.peer_dir(i) + "/work/data"))
            if (e.path().extension() == ".bin") {
                ++shards;
                const TokenShardInfo info = read_token_shard_info(e.path().string());
                CHECK(info.token_bytes == token_bytes);
                island_tokens += info.tokens;
            }
        CHECK(shards == 1);
    }
    CHECK(island_tokens == 70'000);  // the islands' data: disjoint, and all of it
}

}  // namespace

TEST_CASE("peers that cannot see the host's files fetch their assignments and end every round in sync") {
    fetch_and_train(3, 2);
}

TEST_CASE("uint32 shards: peers fetch their chunks from the host, train on uint32 shards and end every round in sync") {
    fetch_and_train(2, 4);
}

TEST_CASE("peers holding the data set under --data (under other names) fetch nothing") {
    Machines m(2);
    for (int i = 1; i <= 2; ++i) {
        fs::create_directories(m.peer_dir(i) + "/mydata");
        fs::copy_file(m.host_dir + "/shards/train_000.bin", m.peer_dir(i) + "/mydata/part-a.bin");
        fs::copy_file(m.host_dir + "/shards/train_001.bin", m.peer_dir(i) + "/mydata/part-b.bin");
    }
    auto host = m.host();
    std::vector<std::unique_ptr<Process>> peers;
    for (int i = 1; i <= 2; ++i) peers.push_back(m.peer(i, {"--data", "mydata"}));
    if (host->wait(240) != 0) FAIL(m.logs(peers, *host));
    for (auto& p : peers) CHECK(p->wait(30) == 0);
    INFO(m.logs(peers, *host));
    for (auto& p : peers) {
        const std::string log = p->log();
        CHECK(log.find("found in mydata/part-a.bin") != std::string::npos);
        CHECK(log.find("found in mydata/part-b.bin") != std::string::npos);
        CHECK(log.find("data: fetching") == std::string::npos);
        CHECK(p->count({.kind = "round_applied"}) == 2);
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
    const std::string traffic = host->log().substr(host->log().find("bytes on the wire by message type"));
    CHECK(traffic.find(" data_request ") == std::string::npos);
    CHECK(traffic.find(" data ") == std::string::npos);
}

TEST_CASE("bad data is refused by name and nothing partial is used") {
    SECTION("data.serve = false and nothing under --data: the peer says what it needs and exits non-zero") {
        Machines m(1, false);
        auto host = m.host();
        auto peer = m.peer(1);
        const int rc = peer->wait(60);
        INFO(peer->log());
        CHECK(rc != 0);
        CHECK_THAT(peer->log(), Contains("does not serve data") && Contains("train_000.bin: BLAKE2b-256 ") &&
                                    Contains("train_001.bin: BLAKE2b-256 "));
    }
    SECTION("a --data shard named like the run's but with other content is ignored, named") {
        Machines m(1, false);
        fs::create_directories(m.peer_dir(1) + "/mydata");
        write_token_shard(m.peer_dir(1) + "/mydata/train_000.bin", random_tokens(40'000, 99));  // same size, other tokens
        fs::copy_file(m.host_dir + "/shards/train_001.bin", m.peer_dir(1) + "/mydata/train_001.bin");
        auto host = m.host();
        auto peer = m.peer(1, {"--data", "mydata"});
        const int rc = peer->wait(60);
        INFO(peer->log());
        CHECK(rc != 0);
        CHECK_THAT(peer->log(), Contains("ignoring mydata/train_000.bin: it is named like the run's shard train_000.bin"));
        CHECK_THAT(peer->log(), Contains("found in mydata/train_001.bin"));
        CHECK_THAT(peer->log(), Contains("train_000.bin: BLAKE2b-256 "));
        CHECK_FALSE(peer->log().find("train_001.bin: BLAKE2b-256 ") != std::string::npos);
    }
    SECTION("the host's copy changed after it described it: the fetched chunk is refused, nothing is kept") {
        Machines m(1);
        auto host = m.host();
        REQUIRE(host->wait_event({.kind = "waiting", .islands = 1}, 60));
        // Same size, other content: the manifest the host sent no longer describes what it serves.
        write_token_shard(m.host_dir + "/shards/train_000.bin", random_tokens(40'000, 7));
        auto peer = m.peer(1);
        const int rc = peer->wait(60);
        INFO(host->log() + "\n--- peer\n" + peer->log());
        CHECK(rc != 0);
        CHECK_THAT(peer->log(), Contains("data from the host for shard train_000.bin") &&
                                    Contains("does not match the run's manifest"));
        int islands = 0;
        for (const auto& e : fs::directory_iterator(m.peer_dir(1) + "/work/data")) islands += e.path().extension() == ".bin";
        CHECK(islands == 0);
        for (const auto& e : fs::directory_iterator(m.peer_dir(1) + "/work/data/chunks")) {
            // Only chunks of the unchanged shard may have been kept, each one verified.
            const std::vector<std::byte> bytes = read_file(e.path().string());
            std::vector<uint16_t> t(bytes.size() / 2);
            std::memcpy(t.data(), bytes.data(), bytes.size());
            CHECK(e.path().stem().string() == hash_tokens(t));
        }
    }
}
