// tests/peers/test_state_on_disk.cpp: a peer's DiLoCo state in memory-mapped files (--state-on-disk).
// FloatStore on disk: zeros to start, a copy that survives its pages leaving the process, no file
// left behind, a clear error for a folder that is not there; an island whose residual lives on disk
// encodes the same bytes as one whose residual is in RAM, round after round and after a resync; a replica
// whose θ is on disk follows the host's updates bit for bit; and in a real run, a peer with its state
// on disk stays in sync with the host and a peer without, round after round.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/float_store.h"
#include "outer_optimizer/aggregator.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/island_worker.h"
#include "tests/core/temp_dir.h"
#include "tests/peers/local_cluster.h"
#include "tests/peers/tiny_island.h"

using namespace arch;
using namespace arch::test;

TEST_CASE("FloatStore on disk: zeros, then a copy that outlives its pages leaving, and no file left") {
    TempDir dir;
    FloatStore zeros = FloatStore::on_disk(dir.file("zeros"), 1'000'000);
    CHECK(zeros.is_on_disk());
    REQUIRE(zeros.size() == 1'000'000);
    CHECK(std::all_of(zeros.values().begin(), zeros.values().end(), [](float x) { return x == 0.0f; }));
    const std::vector<float> values = noise(3'000'001, 4, 1.0f);
    FloatStore held = FloatStore::on_disk(dir.file("held"), values);
    held.release();  // the pages leave the process; the file keeps the data
    CHECK(same_bits(held.values(), values));
    held.data()[7] = 42.0f;
    held.release();
    CHECK(held.values()[7] == 42.0f);
    CHECK_FALSE(std::filesystem::exists(dir.file("held")));  // unlinked once mapped
    FloatStore moved = std::move(held);
    CHECK(moved.values()[7] == 42.0f);
    CHECK(held.size() == 0);
    CHECK_THROWS_WITH(FloatStore::on_disk(dir.file("no/such/folder/x"), 16), Catch::Contains("no/such/folder/x"));
    const FloatStore in_ram(std::vector<float>(8, 1.0f));
    CHECK_FALSE(in_ram.is_on_disk());
}

TEST_CASE("an island's residual on disk gives the bytes of one in RAM, round after round, and after a resync") {
    TinyIsland tiny;
    diloco::IslandWorker ram(tiny.model, tiny.train, "fp4+ef+zstd");
    diloco::IslandWorker disk(tiny.model, tiny.train, "fp4+ef+zstd");
    disk.keep_residual_on_disk(tiny.dir.file("residual"));
    const std::vector<float> theta = tiny.theta();
    for (uint64_t round = 0; round < 6; ++round) {
        INFO("round " << round);
        const diloco::RoundPlan plan{round, 2, {}};
        CHECK(disk.run_round(theta, plan).payload == ram.run_round(theta, plan).payload);
        disk.settle(round);
        ram.settle(round);
        CHECK(same_bits(disk.residual(), ram.residual()));
        if (round == 3) {  // a resync: both start afresh
            disk.reset_residual();
            ram.reset_residual();
        }
    }
    REQUIRE_FALSE(ram.residual().empty());
}

TEST_CASE("a replica with θ on disk follows the host's updates bit for bit") {
    const std::size_t n = 2'000'003;
    diloco::OuterConfig config;
    config.down_codec = "int8:block=256+zstd:1";
    const std::vector<float> theta0 = noise(n, 1, 0.02f);
    diloco::GlobalModel host(theta0, config);
    TempDir dir;
    diloco::GlobalModel replica(FloatStore::on_disk(dir.file("theta"), theta0), config, {}, diloco::GlobalModel::Holder::replica);
    CHECK(replica.theta_on_disk());
    CHECK(replica.hash() == host.hash());
    for (uint32_t round = 0; round < 3; ++round) {
        const std::vector<float> delta = noise(n, 10 + round, 0.01f);
        const outer::WeightedDelta one{delta, 1.0};
        const std::vector<std::byte> update = host.make_update(std::span(&one, 1));
        host.apply_update(update);
        replica.apply_update(update);
        CHECK(replica.hash() == host.hash());
    }
    std::vector<std::byte> state(host.replica_state_bytes());
    host.save_replica_state(state);
    replica.load_replica_state(state);
    CHECK(replica.hash() == host.hash());
}

TEST_CASE("a peer with its state on disk trains in sync with the host and a peer without") {
    Cluster c(2, 4, "mode = \"sync\"", "int8:block=64+ef", 30);
    c.add_peer("in-ram");
    c.add_peer("on-disk", 1.0, {}, [](PeerOptions& o) { o.state_on_disk = true; });
    if (!c.run(120)) FAIL(c.all_logs());
    INFO(c.all_logs());
    CHECK(c.count("host", {.kind = "finished", .round = 4}) == 1);
    const std::string disk = c.log("on-disk");
    CHECK(disk.find("kept on disk, memory-mapped") != std::string::npos);
    CHECK(c.count("on-disk", {.kind = "round_applied", .round = 3}) == 1);
    for (const char* name : {"in-ram", "on-disk"}) CHECK(c.count(name, {.kind = "theta_differs"}) == 0);
    check_in_sync(c, 2);
}
