// tests/core/test_data_loader.cpp: the sequential order against a hand computation of llm.c's rule
// (with the shard switch and wrap), the shuffled order's determinism, cursor/seek resume, and the
// constructor's and seek's errors.
#include "core/data_loader.h"

#include <catch2/catch.hpp>
#include <numeric>

#include "core/error.h"
#include "core/token_shard.h"
#include "tests/core/temp_dir.h"

using arch::DataCursor;
using arch::DataLoader;
using arch::DataOrder;
using Catch::Matchers::Contains;

namespace {

// Shard 0 holds 23 tokens 0..22, shard 1 holds 17 tokens 100..116. Written in reverse name order
// to check that the glob is sorted.
struct TwoShards {
    TempDir dir;
    std::string pattern = dir.file("train_*.bin");
    TwoShards() {
        std::vector<uint16_t> b(17), a(23);
        std::iota(b.begin(), b.end(), uint16_t{100});
        std::iota(a.begin(), a.end(), uint16_t{0});
        arch::write_token_shard(dir.file("train_000001.bin"), b);
        arch::write_token_shard(dir.file("train_000000.bin"), a);
    }
};

struct Batch {
    std::vector<int> inputs, targets;
    bool operator==(const Batch&) const = default;
};

Batch next(DataLoader& loader, int B, int T) {
    Batch b{std::vector<int>(B * T), std::vector<int>(B * T)};
    loader.next_batch(b.inputs.data(), b.targets.data());
    return b;
}

}  // namespace

TEST_CASE("sequential order is llm.c's: B*T+1 tokens, advance B*T, next shard on overrun, wrap") {
    TwoShards shards;
    const int B = 2, T = 4;  // B*T = 8
    DataLoader loader(shards.pattern, B, T, DataOrder::sequential, 0);
    CHECK(loader.total_tokens() == 40);
    REQUIRE(loader.num_shards() == 2);
    CHECK(loader.shard_path(0) == shards.dir.file("train_000000.bin"));
    // llm.c: a shard of n tokens gives (n - 1) / (B*T) batches: 22/8 = 2 from shard 0, 16/8 = 2 from shard 1.
    const int starts[] = {0, 8, 100, 108, 0, 8, 100};
    for (int start : starts) {
        const Batch b = next(loader, B, T);
        for (int i = 0; i < B * T; i++) {
            CHECK(b.inputs[i] == start + i);
            CHECK(b.targets[i] == start + i + 1);
        }
    }
}

TEST_CASE("a single path works as a pattern") {
    TwoShards shards;
    DataLoader loader(shards.dir.file("train_000001.bin"), 1, 16, DataOrder::sequential, 0);
    CHECK(loader.total_tokens() == 17);
    const Batch b = next(loader, 1, 16);
    CHECK(b.inputs[0] == 100);
    CHECK(b.targets[15] == 116);
    CHECK(next(loader, 1, 16) == b);  // one batch per shard, then wrap to itself
}

TEST_CASE("shuffled order is deterministic by seed and rows are windows of the shards") {
    TwoShards shards;
    const int B = 3, T = 5;
    DataLoader a(shards.pattern, B, T, DataOrder::shuffled, 7), b(shards.pattern, B, T, DataOrder::shuffled, 7);
    DataLoader c(shards.pattern, B, T, DataOrder::shuffled, 8);
    bool differs = false, saw_shard[2] = {false, false};
    for (int step = 0; step < 20; step++) {
        const Batch x = next(a, B, T), y = next(b, B, T), z = next(c, B, T);
        CHECK(x == y);
        differs = differs || !(x == z);
        for (int r = 0; r < B; r++) {
            const int first = x.inputs[r * T];
            saw_shard[first >= 100] = true;
            const int last_allowed = first >= 100 ? 116 : 22;
            for (int t = 0; t < T; t++) {
                CHECK(x.inputs[r * T + t] == first + t);
                CHECK(x.targets[r * T + t] == first + t + 1);
            }
            CHECK(first + T <= last_allowed);
        }
    }
    CHECK(differs);
    CHECK(saw_shard[0]);
    CHECK(saw_shard[1]);
}

TEST_CASE("cursor and seek resume exactly the same batches") {
    TwoShards shards;
    for (DataOrder order : {DataOrder::sequential, DataOrder::shuffled}) {
        const int B = 2, T = 4;
        DataLoader first(shards.pattern, B, T, order, 3);
        for (int i = 0; i < 3; i++) next(first, B, T);
        const DataCursor saved = first.cursor();
        std::vector<Batch> expected;
        for (int i = 0; i < 6; i++) expected.push_back(next(first, B, T));

        DataLoader resumed(shards.pattern, B, T, order, 999);
        resumed.seek(saved);
        CHECK(resumed.cursor() == saved);
        for (const Batch& e : expected) CHECK(next(resumed, B, T) == e);
    }
}

TEST_CASE("the loader refuses what cannot work") {
    TwoShards shards;
    CHECK_THROWS_WITH(DataLoader(shards.dir.file("val_*.bin"), 1, 4, DataOrder::sequential, 0),
                      Contains("no token shard matches") && Contains("val_*.bin"));
    CHECK_THROWS_WITH(DataLoader(shards.dir.file("missing.bin"), 1, 4, DataOrder::sequential, 0),
                      Contains("missing.bin"));
    // shard 1 holds 17 tokens; B*T+1 = 18 does not fit.
    CHECK_THROWS_WITH(DataLoader(shards.pattern, 1, 17, DataOrder::sequential, 0),
                      Contains("B*T larger than the shard") && Contains("train_000001.bin") && Contains("17"));
    CHECK_THROWS_WITH(DataLoader(shards.pattern, 0, 4, DataOrder::sequential, 0), Contains("positive"));
    CHECK_THROWS_WITH(DataLoader(shards.pattern, 1, 4, DataOrder::sequential, 0, 110),
                      Contains("token id 110") && Contains("train_000001.bin"));
    CHECK_NOTHROW(DataLoader(shards.pattern, 1, 4, DataOrder::sequential, 0, 117));

    write_file(shards.dir.file("train_000002.bin"), "not a shard");
    CHECK_THROWS_WITH(DataLoader(shards.pattern, 1, 4, DataOrder::sequential, 0),
                      Contains("train_000002.bin") && Contains("truncated"));
}

TEST_CASE("seek refuses a cursor that does not fit the shards") {
    TwoShards shards;
    DataLoader loader(shards.pattern, 1, 4, DataOrder::sequential, 0);
    DataCursor c = loader.cursor();
    c.shard = 2;
    CHECK_THROWS_WITH(loader.seek(c), Contains("shard 2") && Contains("only 2"));
    c.shard = 1;
    c.position = 18;
    CHECK_THROWS_WITH(loader.seek(c), Contains("token 18") && Contains("17"));
    c.position = 17;
    CHECK_NOTHROW(loader.seek(c));  // at the end: the next batch moves to the next shard
    const Batch b = next(loader, 1, 4);
    CHECK(b.inputs[0] == 0);
    c.rng_state = {};
    CHECK_THROWS_WITH(loader.seek(c), Contains("random state"));
}
