// tests/net/test_message.cpp: the 36-byte header: round trip, and a clear reason (never a crash)
// for truncated frames, wrong magic, wrong version, wrong length and random garbage; a received
// payload held where it arrived.
#include <catch2/catch.hpp>
#include <random>

#include "net/message.h"
#include "net/payload.h"
#include "tests/test_bytes.h"

using namespace arch::net;

TEST_CASE("header round trip", "[net][message]") {
    Header h;
    h.type = 0x0123;
    h.flags = 7;
    h.round = (uint64_t{1} << 40) + 42;  // beyond a u32: the header carries the run's u64 rounds
    h.run_id = 0xdeadbeefcafef00dull;
    h.sequence = 99;
    const std::vector<std::byte> payload = arch::test::bytes_of({1, 2, 3, 4, 5});
    const auto frame = encode_message(h, payload);
    REQUIRE(frame.size() == kHeaderBytes + payload.size());
    std::string error;
    const auto d = decode_header(frame, error);
    REQUIRE(d);
    CHECK(d->type == h.type);
    CHECK(d->flags == h.flags);
    CHECK(d->round == h.round);
    CHECK(d->run_id == h.run_id);
    CHECK(d->sequence == h.sequence);
    CHECK(d->payload_bytes == payload.size());
    CHECK(frame[0] == std::byte{'A'});  // magic reads "ARCH" on the wire
}

TEST_CASE("bad headers are rejected with a reason", "[net][message]") {
    Header h;
    h.type = kFirstProtocolType;
    auto frame = encode_message(h, arch::test::filled(10, 0xab));
    std::string error;

    SECTION("truncated") {
        CHECK_FALSE(decode_header(std::span(frame).first(20), error));
        CHECK_THAT(error, Catch::Contains("truncated header"));
        CHECK_FALSE(decode_header({}, error));
    }
    SECTION("wrong magic") {
        frame[0] ^= std::byte{0xff};
        CHECK_FALSE(decode_header(frame, error));
        CHECK_THAT(error, Catch::Contains("bad magic"));
    }
    SECTION("wrong version") {
        frame[4] = std::byte{kVersion + 1};
        CHECK_FALSE(decode_header(frame, error));
        CHECK_THAT(error, Catch::Contains("unsupported message version " + std::to_string(kVersion + 1)));
    }
    SECTION("payload shorter or longer than declared") {
        CHECK_FALSE(decode_header(std::span(frame).first(frame.size() - 1), error));
        CHECK_THAT(error, Catch::Contains("length mismatch"));
        frame.push_back(std::byte{0});
        CHECK_FALSE(decode_header(frame, error));
        frame[16] = std::byte{0xff};  // payload_bytes huge
        frame[19] = std::byte{0xff};
        CHECK_FALSE(decode_header(frame, error));
        CHECK_THAT(error, Catch::Contains("length mismatch"));
    }
}

TEST_CASE("random garbage never decodes into a header by accident", "[net][message]") {
    std::mt19937 rng(7);
    std::string error;
    for (int i = 0; i < 2000; ++i) {
        std::vector<std::byte> junk(rng() % 80);
        for (auto& b : junk) b = static_cast<std::byte>(rng());
        CHECK_FALSE(decode_header(junk, error));
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("a payload reads its bytes where they lie, and gives a vector of its own back without a copy", "[net][message]") {
    std::vector<std::byte> bytes = arch::test::bytes_of({9, 8, 7});
    const std::byte* memory = bytes.data();
    Payload own(std::move(bytes));
    CHECK(own.data() == memory);
    CHECK(own.size() == 3);
    std::vector<std::byte> back = own.take();
    CHECK(back.data() == memory);
    CHECK(own.empty());
    // Bytes that something else keeps (a received libzmq message): read in place, copied on take().
    auto frame = std::make_shared<std::vector<std::byte>>(arch::test::bytes_of({1, 2, 3, 4}));
    Payload held(frame, std::span<const std::byte>(*frame).subspan(1));
    CHECK(held.data() == frame->data() + 1);
    frame.reset();  // the payload keeps it alive
    const std::vector<std::byte> copy = held.take();
    CHECK(copy == arch::test::bytes_of({2, 3, 4}));
    // A copy of a payload made of a vector shares it: taking one copies, the other stays whole.
    Payload first(arch::test::bytes_of({5, 6}));
    Payload second = first;
    CHECK(first.take() == arch::test::bytes_of({5, 6}));
    CHECK(second.size() == 2);
    CHECK(second.take() == arch::test::bytes_of({5, 6}));
}
