// tests/core/test_token_shard.cpp: llm.c token shard round trip, exact layout, and each bad shard
// (missing, wrong magic or version, truncated, extra bytes) refused; a failed write overwrites nothing.
#include "core/token_shard.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "tests/core/temp_dir.h"

using Catch::Matchers::Contains;

namespace {

std::string with_int(std::string bytes, size_t index, int32_t value) {
    std::memcpy(bytes.data() + 4 * index, &value, 4);
    return bytes;
}

}  // namespace

TEST_CASE("a shard written is read back identically, in llm.c's layout") {
    TempDir dir;
    const std::string path = dir.file("train_000000.bin");
    const std::vector<uint16_t> tokens = {50256, 0, 1, 65535, 42, 7};
    arch::write_token_shard(path, tokens);
    CHECK(arch::read_token_shard(path) == tokens);
    CHECK(arch::read_token_shard_count(path) == tokens.size());
    CHECK_FALSE(std::filesystem::exists(path + ".tmp"));

    const std::string bytes = read_file_bytes(path);
    REQUIRE(bytes.size() == 1024 + 2 * tokens.size());
    int32_t header[256];
    std::memcpy(header, bytes.data(), sizeof(header));
    CHECK(header[0] == 20240520);
    CHECK(header[1] == 1);
    CHECK(header[2] == 6);
    for (int i = 3; i < 256; i++) CHECK(header[i] == 0);
    uint16_t first;
    std::memcpy(&first, bytes.data() + 1024, 2);
    CHECK(first == 50256);

    arch::write_token_shard(path, {});
    CHECK(arch::read_token_shard(path).empty());
}

TEST_CASE("bad shards are refused with a reason") {
    TempDir dir;
    const std::string good_path = dir.file("good.bin"), path = dir.file("bad.bin");
    arch::write_token_shard(good_path, std::vector<uint16_t>{1, 2, 3, 4});
    const std::string good = read_file_bytes(good_path);

    CHECK_THROWS_WITH(arch::read_token_shard(dir.file("none.bin")), Contains("none.bin"));
    write_file(path, with_int(good, 0, 20240326));
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("bad.bin") && Contains("magic 20240326") &&
                                                        Contains("expected 20240520"));
    write_file(path, with_int(good, 1, 2));
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("version 2"));
    write_file(path, good.substr(0, good.size() - 2));
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("truncated") && Contains("4 tokens"));
    write_file(path, good.substr(0, 100));
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("truncated") && Contains("header"));
    write_file(path, good + "xx");
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("extra bytes"));
    write_file(path, with_int(good, 2, -1));
    CHECK_THROWS_WITH(arch::read_token_shard(path), Contains("negative"));
    CHECK_THROWS_WITH(arch::read_token_shard_count(dir.file("none.bin")), Contains("none.bin"));
}

TEST_CASE("a failed write leaves the existing shard untouched") {
    TempDir dir;
    const std::string path = dir.file("train_000000.bin");
    const std::vector<uint16_t> old_tokens = {9, 8, 7};
    arch::write_token_shard(path, old_tokens);
    std::filesystem::create_directory(path + ".tmp");  // makes the temporary file impossible to create
    CHECK_THROWS_WITH(arch::write_token_shard(path, std::vector<uint16_t>{1, 2}), Contains(".tmp"));
    CHECK(arch::read_token_shard(path) == old_tokens);
    CHECK_THROWS_AS(arch::write_token_shard(dir.file("no/such/dir/x.bin"), old_tokens), arch::Error);
}
