// tests/peers/test_net_link.cpp: NetLink's transfers between two links wired back to back in memory
// (each one's sends are the other's receives; no sockets): a blob's memory given back is where the
// next blob of its kind is put together, byte for byte the blob sent, and a blob of another size
// gets memory of its own.
#include <catch2/catch.hpp>

#include <deque>

#include "peers/net_link.h"
#include "tests/peers/inbox_link.h"

using arch::LinkEvent;
using arch::NetLink;
using arch::net::Incoming;

namespace {

class WiredLink final : public arch::test::InboxLink {
public:
    explicit WiredLink(std::string name) : InboxLink([](const std::string& line) { FAIL_CHECK(line); }), name_(std::move(name)) {}
    WiredLink* other = nullptr;

private:
    bool send_socket(const std::string&, const arch::net::Header& h, arch::net::Pieces p) override {
        std::vector<std::byte> bytes;
        arch::net::append_pieces(bytes, p);
        Incoming in;
        in.peer_key = name_;
        in.header = h;
        in.payload = std::move(bytes);
        other->inbox.push_back(std::move(in));
        return true;
    }
    std::string name_;
};

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
    std::vector<std::byte> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>((i * 131 + seed * 7) >> 3);
    return b;
}

// Sends `blob` from a to b and polls both until b delivers it (a bounded number of turns).
LinkEvent deliver(WiredLink& a, WiredLink& b, const std::vector<std::byte>& blob) {
    REQUIRE(a.send_blob("b", arch::protocol::Type::update, 1, arch::share_blob(blob)));
    for (int turn = 0; turn < 100000; ++turn) {
        (void)a.poll(0);
        if (std::optional<LinkEvent> e = b.poll(0); e && e->kind == LinkEvent::Kind::message) return std::move(*e);
    }
    FAIL("the blob never arrived");
    return {};
}

}  // namespace

TEST_CASE("a blob's memory given back takes the next blob of its kind; another size gets its own", "[link]") {
    WiredLink a("a"), b("b");
    a.other = &b;
    b.other = &a;
    const std::size_t size = 5 * NetLink::kChunkBytes + 12345;  // a few chunks, above the smallest spare
    const auto first_blob = pattern(size, 1);
    LinkEvent first = deliver(a, b, first_blob);
    REQUIRE(first.payload == first_blob);
    const std::byte* memory = first.payload.data();
    b.give_back(std::move(first.payload));
    // A little larger: it fits the eighth a receiver reserves beyond a blob, so it lands in the same memory.
    const auto second_blob = pattern(size + size / 20, 2);
    LinkEvent second = deliver(a, b, second_blob);
    CHECK(second.payload.data() == memory);
    REQUIRE(second.payload == second_blob);
    b.give_back(std::move(second.payload));
    // Three times the size: no spare holds it, and the spare stays for its own kind.
    const auto big_blob = pattern(3 * size, 3);
    LinkEvent big = deliver(a, b, big_blob);
    CHECK(big.payload.data() != memory);
    REQUIRE(big.payload == big_blob);
    const auto third_blob = pattern(size - 999, 4);
    LinkEvent third = deliver(a, b, third_blob);
    CHECK(third.payload.data() == memory);
    REQUIRE(third.payload == third_blob);
}
