// tests/net/test_transfer.cpp: the transfer state machines without sockets: a full transfer with
// credit never exceeding the window, resume from held chunks, and every kind of bad chunk rejected
// with a reason while the receiver's data stays as it was.
#include <catch2/catch.hpp>
#include <deque>
#include <random>

#include "core/error.h"
#include "net/message.h"
#include "net/transfer.h"
#include "tests/test_bytes.h"

using namespace arch::net;

namespace {

std::vector<std::byte> random_blob(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> blob(n);
    for (auto& b : blob) b = static_cast<std::byte>(rng());
    return blob;
}

// Delivers messages between one sender and one receiver in order; records the largest number of
// chunks ever in flight.
struct Wire {
    std::deque<Outbound> to_receiver, to_sender;
    std::size_t max_chunks_in_flight = 0;
    void push(std::deque<Outbound>& q, std::vector<Outbound> msgs) {
        for (auto& m : msgs) q.push_back(std::move(m));
        std::size_t chunks = 0;
        for (const auto& m : to_receiver) chunks += m.type == kTransferChunk;
        max_chunks_in_flight = std::max(max_chunks_in_flight, chunks);
    }
    // Runs until both queues drain or `limit` receiver deliveries happened.
    void run(TransferSender& s, TransferReceiver& r, std::size_t limit = SIZE_MAX) {
        while ((!to_receiver.empty() || !to_sender.empty()) && limit > 0) {
            if (!to_receiver.empty()) {
                Outbound m = std::move(to_receiver.front());
                to_receiver.pop_front();
                auto step = r.on_message(m.type, m.joined());
                REQUIRE(step.rejected.empty());
                push(to_sender, std::move(step.replies));
                --limit;
            }
            if (!to_sender.empty()) {
                Outbound m = std::move(to_sender.front());
                to_sender.pop_front();
                auto step = s.on_message(m.type, m.payload);
                REQUIRE(step.rejected.empty());
                push(to_receiver, std::move(step.replies));
            }
        }
    }
};

// A receiver that has accepted `s`'s begin (session 1), and the chunk messages s would send.
TransferReceiver started(TransferSender& s, ReceiverLimits limits = {}) {
    TransferReceiver r(limits);
    const auto b = s.begin();
    auto step = r.on_message(b.type, b.payload);
    REQUIRE(step.rejected.empty());
    REQUIRE(step.replies.size() == 1);
    return r;
}

std::vector<std::byte> chunk(uint64_t id, uint32_t session, uint32_t index,
                           std::span<const std::byte> data) {
    return encode_chunk(id, session, index, data);
}

}  // namespace

TEST_CASE("a transfer completes with credit bounding chunks in flight", "[net][transfer]") {
    const auto blob = random_blob(1000003, 1);
    TransferSender s(7, blob, 65536, 3);
    ReceiverLimits limits;
    limits.window_chunks = 3;
    TransferReceiver r(limits);
    Wire wire;
    wire.push(wire.to_receiver, {s.begin()});
    wire.run(s, r);
    REQUIRE(r.complete());
    CHECK(s.done());
    CHECK(r.tag() == 3);
    CHECK(s.chunks_sent() == s.chunk_count());
    CHECK(s.chunk_count() == 16);
    CHECK(wire.max_chunks_in_flight <= 3);
    CHECK(r.take() == blob);
    CHECK_FALSE(r.active());
}

TEST_CASE("a blob in pieces arrives as the pieces joined, chunks across their edges put together", "[net][transfer]") {
    const auto blob = random_blob(300007, 2);
    // A head, a body and a tail of odd sizes, and an empty piece: no chunk edge falls on a piece's edge.
    const std::span<const std::byte> all(blob);
    const std::vector<std::span<const std::byte>> pieces{all.first(37), all.subspan(37, 0), all.subspan(37, 299900),
                                                         all.subspan(299937)};
    CHECK(checksum(pieces) == checksum(all));
    for (const uint32_t chunk : {1000u, 4096u, 299937u, 400000u}) {
        TransferSender s(9, pieces, nullptr, chunk, 5, checksum(pieces));
        TransferReceiver r;
        Wire wire;
        wire.push(wire.to_receiver, {s.begin()});
        wire.run(s, r);
        REQUIRE(r.complete());
        CHECK(s.done());
        CHECK(s.chunk_count() == (blob.size() + chunk - 1) / chunk);
        CHECK(r.take() == blob);
    }
}

TEST_CASE("a chunk's data goes out from where the blob lies: no copy before the frame's", "[net][transfer]") {
    const auto blob = random_blob(10000, 3);
    const std::span<const std::byte> all(blob);
    const std::vector<std::span<const std::byte>> pieces{all.first(1500), all.subspan(1500)};
    TransferSender s(4, pieces, nullptr, 1000, 0, checksum(pieces));
    (void)s.begin();
    const TransferStep step = s.on_message(kTransferStatus, encode(StatusMsg{4, 1, 2, std::vector<bool>(10, false)}));
    REQUIRE(step.replies.size() == 2);
    const Outbound& second = step.replies[1];  // bytes [1000, 2000): across the pieces' edge
    CHECK(second.payload.size() == kChunkPrefixBytes);
    REQUIRE(second.data.size() == 2);
    CHECK(second.data[0].data() == blob.data() + 1000);
    CHECK(second.data[0].size() == 500);
    CHECK(second.data[1].data() == blob.data() + 1500);
    CHECK(second.data[1].size() == 500);
    // On the wire: the prefix, then the data, as a chunk encoded whole.
    CHECK(second.joined() == encode_chunk(4, 1, 1, all.subspan(1000, 1000)));
    CHECK(second.pieces().size() == 3);
}

TEST_CASE("an empty blob completes at once", "[net][transfer]") {
    TransferSender s(1, {}, 1024);
    TransferReceiver r;
    Wire wire;
    wire.push(wire.to_receiver, {s.begin()});
    wire.run(s, r);
    CHECK(r.complete());
    CHECK(s.done());
    CHECK(r.take().empty());
}

TEST_CASE("resume after a lost connection sends only the missing chunks", "[net][transfer]") {
    const auto blob = random_blob(20 * 4096 + 17, 2);
    TransferSender s(9, blob, 4096);
    TransferReceiver r;
    Wire wire;
    wire.push(wire.to_receiver, {s.begin()});
    wire.run(s, r, 8);  // begin + 7 chunks delivered, then the connection drops
    wire.to_receiver.clear();
    wire.to_sender.clear();
    const uint32_t held = r.chunks_held();
    REQUIRE(held == 7);
    const uint64_t sent_before = s.chunks_sent();

    wire.push(wire.to_receiver, {s.begin()});  // reconnected
    wire.run(s, r);
    REQUIRE(r.complete());
    CHECK(s.chunks_sent() - sent_before == s.chunk_count() - held);
    CHECK(r.take() == blob);
}

TEST_CASE("bad chunks are rejected and leave the receiver's data unchanged", "[net][transfer]") {
    const auto blob = random_blob(10 * 1000 + 5, 3);
    TransferSender s(5, blob, 1000);
    TransferReceiver r = started(s);
    const auto good0 = std::span(blob).first(1000);
    REQUIRE(r.on_message(kTransferChunk, chunk(5, 1, 0, good0)).rejected.empty());
    const std::vector<std::byte> data_before(r.data().begin(), r.data().end());
    const auto held_before = r.held();

    auto expect_rejected = [&](uint16_t type, const std::vector<std::byte>& payload,
                               const std::string& why) {
        const auto step = r.on_message(type, payload);
        INFO(step.rejected);
        CHECK_THAT(step.rejected, Catch::Contains(why));
        CHECK(std::vector<std::byte>(r.data().begin(), r.data().end()) == data_before);
        CHECK(r.held() == held_before);
        CHECK(r.chunks_held() == 1);
        return step;
    };
    SECTION("out-of-range index") {
        expect_rejected(kTransferChunk, chunk(5, 1, 11, good0), "out of range");
        expect_rejected(kTransferChunk, chunk(5, 1, 0xffffffffu, good0), "out of range");
    }
    SECTION("duplicate") {
        const auto step = expect_rejected(kTransferChunk, chunk(5, 1, 0, good0), "duplicate");
        REQUIRE(step.replies.size() == 1);  // the credit it used comes back
        CHECK(step.replies[0].type == kTransferCredit);
    }
    SECTION("bad checksum asks for a resend") {
        auto payload = chunk(5, 1, 1, std::span(blob).subspan(1000, 1000));
        payload.back() ^= std::byte{1};
        const auto step = expect_rejected(kTransferChunk, payload, "checksum mismatch");
        std::string error;
        REQUIRE(step.replies.size() == 1);
        const auto credit = decode_credit(step.replies[0].payload, error);
        REQUIRE(credit);
        CHECK(credit->resend == 1);
    }
    SECTION("wrong length") {
        expect_rejected(kTransferChunk, chunk(5, 1, 1, std::span(blob).subspan(1000, 999)),
                        "expected 1000");
        expect_rejected(kTransferChunk, chunk(5, 1, 10, std::span(blob).subspan(0, 1000)),
                        "expected 5");
    }
    SECTION("unknown transfer, truncated and garbage payloads, wrong types") {
        expect_rejected(kTransferChunk, chunk(6, 1, 1, good0), "unknown transfer 6");
        expect_rejected(kTransferChunk, arch::test::filled(31, 0), "at least 32");
        expect_rejected(kTransferChunk, {}, "transfer-chunk");
        expect_rejected(kTransferCredit, arch::test::filled(20, 0), "unexpected transfer-credit");
        expect_rejected(kFirstProtocolType, {}, "unexpected type 0x0100");
        expect_rejected(kTransferAbort, arch::test::filled(3, 0), "transfer-abort");
    }
    SECTION("a begin for another transfer, or changed parameters") {
        TransferSender other(6, blob, 1000);
        expect_rejected(kTransferBegin, other.begin().payload, "in progress");
        TransferSender changed(5, random_blob(blob.size(), 4), 1000);
        expect_rejected(kTransferBegin, changed.begin().payload, "different");
    }
    SECTION("too many bad chunks abort the transfer") {
        ReceiverLimits limits;
        limits.max_bad_chunks = 2;
        TransferReceiver strict = started(s, limits);
        for (int i = 0; i < 2; ++i)
            CHECK_FALSE(strict.on_message(kTransferChunk, chunk(5, 1, 99, good0)).rejected.empty());
        CHECK(strict.active());
        const auto step = strict.on_message(kTransferChunk, chunk(5, 1, 99, good0));
        CHECK_THAT(step.rejected, Catch::Contains("aborted"));
        REQUIRE(step.replies.size() == 1);
        CHECK(step.replies[0].type == kTransferAbort);
        CHECK_FALSE(strict.active());
        // The sender hears it and fails with the reason.
        s.on_message(step.replies[0].type, step.replies[0].payload);
        CHECK(s.failed());
        CHECK_THAT(s.error(), Catch::Contains("too many bad chunks"));
    }
}

TEST_CASE("begin messages outside the receiver's limits are refused", "[net][transfer]") {
    ReceiverLimits limits;
    limits.max_total_bytes = 1 << 20;
    limits.max_chunk_bytes = 4096;
    TransferReceiver r(limits, 77);
    auto rejected = [&](const BeginMsg& m) {
        return r.on_message(kTransferBegin, encode(m)).rejected;
    };
    BeginMsg m{77, 8192, 4096, 2, 0, {}};
    CHECK_THAT(rejected(BeginMsg{78, 8192, 4096, 2, 0, {}}),
               Catch::Contains("expected transfer 77"));
    CHECK_THAT(rejected(BeginMsg{77, 2 << 20, 4096, 512, 0, {}}),
               Catch::Contains("exceeds the limit"));
    CHECK_THAT(rejected(BeginMsg{77, 8192, 8192, 1, 0, {}}), Catch::Contains("chunk size"));
    CHECK_THAT(rejected(BeginMsg{77, 8192, 0, 0, 0, {}}), Catch::Contains("chunk size"));
    CHECK_THAT(rejected(BeginMsg{77, 8192, 4096, 3, 0, {}}), Catch::Contains("chunk count"));
    CHECK_THAT(r.on_message(kTransferBegin, arch::test::filled(43, 0)).rejected,
               Catch::Contains("expected 44"));
    CHECK_FALSE(r.active());
    CHECK(rejected(m).empty());
    CHECK(r.active());
    CHECK_THROWS_AS(r.take(), arch::Error);
}

TEST_CASE("a blob whose chunks verify but whose digest does not is aborted", "[net][transfer]") {
    const auto blob = random_blob(3000, 5);
    TransferSender s(3, blob, 1000);
    TransferReceiver r = started(s);
    auto other = random_blob(1000, 6);
    r.on_message(kTransferChunk, chunk(3, 1, 0, std::span(blob).first(1000)));
    r.on_message(kTransferChunk, chunk(3, 1, 1, std::span(blob).subspan(1000, 1000)));
    const auto step =
        r.on_message(kTransferChunk, chunk(3, 1, 2, other));  // self-consistent, wrong data
    CHECK_THAT(step.rejected, Catch::Contains("blob digest"));
    CHECK_FALSE(r.complete());
    CHECK_FALSE(r.active());
}

TEST_CASE("random garbage fed to both state machines never crashes them", "[net][transfer]") {
    const auto blob = random_blob(5000, 7);
    TransferSender s(11, blob, 1000);
    ReceiverLimits limits;
    limits.max_total_bytes = 1 << 20;  // a random begin must not make the test allocate gigabytes
    TransferReceiver r = started(s, limits);
    std::mt19937 rng(8);
    for (int i = 0; i < 3000; ++i) {
        std::vector<std::byte> junk(rng() % 120);
        for (auto& b : junk) b = static_cast<std::byte>(rng());
        if (junk.size() >= 8 && rng() % 2)
            junk[0] = std::byte{11}, std::fill(junk.begin() + 1, junk.begin() + 8, std::byte{0});
        const auto type = static_cast<uint16_t>(kTransferBegin + rng() % 7);
        (void)r.on_message(type, junk);
        (void)s.on_message(type, junk);
    }
    CHECK(r.chunks_held() == 0);
}

TEST_CASE("a control message buys the sender at most one chunk: one status per begin, a credit per chunk in flight",
          "[net][transfer]") {
    const auto blob = random_blob(64 * 1000, 12);
    TransferSender s(21, blob, 1000);
    auto chunks_in = [](const TransferStep& step) {
        return std::count_if(step.replies.begin(), step.replies.end(), [](const Outbound& o) { return o.type == kTransferChunk; });
    };
    const std::vector<bool> none(s.chunk_count(), false);
    // A status nobody asked for restarts nothing.
    CHECK_THAT(s.on_message(kTransferStatus, encode(StatusMsg{21, 1, 8, none})).rejected, Catch::Contains("answers no"));
    CHECK(s.chunks_sent() == 0);
    // Asked for: a window of a million is cut to the sender's own.
    (void)s.begin();
    TransferStep first = s.on_message(kTransferStatus, encode(StatusMsg{21, 1, 1000000, none}));
    CHECK(first.rejected.empty());
    CHECK(chunks_in(first) == TransferSender::kMaxWindowChunks);
    // A second status for the same begin: refused, and no window of chunks again.
    CHECK_THAT(s.on_message(kTransferStatus, encode(StatusMsg{21, 2, 8, none})).rejected, Catch::Contains("answers no"));
    CHECK(s.chunks_sent() == TransferSender::kMaxWindowChunks);
    // Credits for more chunks than are in flight buy nothing.
    CHECK_THAT(s.on_message(kTransferCredit, encode(CreditMsg{21, 1, 1000, kNoResend})).rejected, Catch::Contains("in flight"));
    CHECK(s.chunks_sent() == TransferSender::kMaxWindowChunks);
    // One credit, one chunk, a resend included.
    CHECK(chunks_in(s.on_message(kTransferCredit, encode(CreditMsg{21, 1, 1, kNoResend}))) == 1);
    CHECK(chunks_in(s.on_message(kTransferCredit, encode(CreditMsg{21, 1, 1, 3}))) == 1);
    // A resend of a chunk never sent is not a way to jump ahead: a new chunk in order instead.
    const TransferStep ahead = s.on_message(kTransferCredit, encode(CreditMsg{21, 1, 1, 60}));
    REQUIRE(chunks_in(ahead) == 1);
    std::string error;
    CHECK(decode_chunk(ahead.replies[0].joined(), error)->index == TransferSender::kMaxWindowChunks + 1);
    CHECK(s.chunks_sent() == TransferSender::kMaxWindowChunks + 3);
    // A bitmap longer than the transfer is refused before it is decoded.
    CHECK_FALSE(decode_status(encode(StatusMsg{21, 1, 8, std::vector<bool>(100000, true)}), error, s.chunk_count()));
    CHECK_THAT(error, Catch::Contains("100000 chunks"));
}

TEST_CASE("a receiver's memory follows the chunks that arrived, never a begin's declared size", "[net][transfer]") {
    const auto blob = random_blob(200 * 1000, 13);
    TransferSender s(31, blob, 1000);
    ReceiverLimits limits;
    limits.window_chunks = 4;
    limits.max_bad_chunks = 2;
    TransferReceiver r = started(s, limits);
    CHECK(r.data().empty());  // 200 kB declared, nothing held
    CHECK(r.on_message(kTransferChunk, chunk(31, 1, 0, std::span(blob).first(1000))).rejected.empty());
    CHECK(r.data().size() == 1000);
    // Further ahead of the chunks held than the window and the resends allow: a bad chunk, nothing kept.
    const std::size_t far = 1 + limits.window_chunks + limits.max_bad_chunks + 1;
    CHECK_THAT(r.on_message(kTransferChunk, chunk(31, 1, static_cast<uint32_t>(far), std::span(blob).subspan(far * 1000, 1000))).rejected,
               Catch::Contains("further ahead"));
    CHECK(r.data().size() == 1000);
    // Within it: taken, the memory grows to it.
    const std::size_t near = far - 1;
    CHECK(r.on_message(kTransferChunk, chunk(31, 1, static_cast<uint32_t>(near), std::span(blob).subspan(near * 1000, 1000))).rejected.empty());
    CHECK(r.data().size() == (near + 1) * 1000);
    // A begin whose chunk bitmap alone would be large is refused.
    TransferReceiver other;
    CHECK_THAT(other.on_message(kTransferBegin, encode(BeginMsg{32, 1ull << 30, 1024, 1u << 20, 0, {}})).rejected,
               Catch::Contains("at most 65536"));
    // The whole blob still arrives and verifies, out of order within the window.
    Wire wire;
    TransferSender again(31, blob, 1000);
    TransferReceiver fresh(limits);
    wire.push(wire.to_receiver, {again.begin()});
    wire.run(again, fresh);
    REQUIRE(fresh.complete());
    CHECK(fresh.take() == blob);
}

TEST_CASE("memory given to a receiver takes the blob in place: written over, never read, the blob exact", "[net][transfer]") {
    const auto blob = random_blob(100 * 1000 + 17, 21);
    TransferSender s(41, blob, 1000);
    ReceiverLimits limits;
    limits.window_chunks = 4;
    TransferReceiver r = started(s, limits);
    // Too small for the blob: refused, and left with the caller.
    std::vector<std::byte> small(blob.size() - 1, std::byte{0x5a});
    CHECK_FALSE(r.use_memory(small));
    CHECK(small.size() == blob.size() - 1);
    // Larger than the blob and full of other bytes: taken, where the chunks go.
    std::vector<std::byte> spare(blob.size() + 4096, std::byte{0xa5});
    const std::byte* memory = spare.data();
    REQUIRE(r.use_memory(spare));
    CHECK(spare.empty());
    CHECK(r.data().empty());  // nothing held yet: the stale bytes are not the blob's
    Wire wire;  // after the chunk below, the rest from a resumed sender
    // A chunk out of order first, so that stale bytes stand before it until overwritten.
    REQUIRE(r.on_message(kTransferChunk, chunk(41, 1, 2, std::span(blob).subspan(2000, 1000))).rejected.empty());
    CHECK(r.data().size() == 3000);
    // The sender starts from its begin's status; the chunk already held is not sent again.
    TransferSender again(41, blob, 1000);
    wire.push(wire.to_receiver, {again.begin()});
    wire.run(again, r);
    REQUIRE(r.complete());
    // Once a chunk is held the memory is the receiver's own: no more is taken.
    const std::vector<std::byte> got = r.take();
    CHECK(got.data() == memory);
    CHECK(got == blob);
    std::vector<std::byte> late(blob.size(), std::byte{1});
    TransferReceiver busy = started(s, limits);
    REQUIRE(busy.on_message(kTransferChunk, chunk(41, 1, 0, std::span(blob).first(1000))).rejected.empty());
    CHECK_FALSE(busy.use_memory(late));
}
