// tests/peers/test_blob_pool.cpp: BlobPool, the host's spare for the state of θ: a blob's buffer comes
// back once its last holder lets go (on any thread), and the next blob is built in the same memory;
// the pool keeps one spare, the larger; a blob can outlive whoever made the pool.
#include <catch2/catch.hpp>

#include <thread>

#include "peers/blob_pool.h"

using namespace arch;

TEST_CASE("a blob's buffer returns to the pool when its last holder lets go, and is built in again") {
    std::shared_ptr<BlobPool> pool = BlobPool::make();
    CHECK(pool->take().capacity() == 0);  // nothing to give yet

    std::vector<std::byte> bytes(1 << 20, std::byte{7});
    const std::byte* memory = bytes.data();
    SharedBlob blob = pool->share(std::move(bytes));
    SharedBlob queue = blob;  // a second holder, e.g. a send queue
    blob.reset();
    CHECK(pool->take().capacity() == 0);  // still held

    std::thread writer([held = std::move(queue)]() mutable { held.reset(); });  // let go on another thread
    writer.join();
    std::vector<std::byte> again = pool->take();
    CHECK(again.empty());
    CHECK(again.capacity() >= (1u << 20));
    CHECK(again.data() == memory);  // the same memory, not fresh pages
    CHECK(pool->take().capacity() == 0);  // taken once

    // One spare, the larger: a smaller buffer given back after it is freed.
    pool->share(std::vector<std::byte>(1 << 10)).reset();
    pool->share(std::move(again)).reset();
    CHECK(pool->take().capacity() >= (1u << 20));
}

TEST_CASE("a blob outlives the pool's maker") {
    SharedBlob blob;
    {
        std::shared_ptr<BlobPool> pool = BlobPool::make();
        blob = pool->share(std::vector<std::byte>(64, std::byte{1}));
    }
    REQUIRE(blob->size() == 64);
    CHECK((*blob)[63] == std::byte{1});
    blob.reset();  // the pool goes with it, no leak (ASan) and no use after free
}
