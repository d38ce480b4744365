// tests/peers/test_desloc_run.cpp: DES-LOC (run.toml outer.sync_moments_every) across real processes:
// `archipelago host` and peers over CURVE on loopback. After every round that carries moments each
// island holds exactly the mean the host made (the hash both log), an island of two ZeRO-3 devices
// too, and θ stays bit-identical to the host's. Moments of the wrong size, with a NaN, for another
// round, declaring more bytes than m and v hold, or finite but not what AdamW makes of any clipped
// gradients are refused with the reason logged, and change nothing: the mean is made of the honest
// island's alone.
#include <catch2/catch.hpp>

#include <cmath>

#include "peers/protocol.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

namespace {

// run.toml with [outer] sync_moments_every = k.
void set_moments_every(const Run& run, int k) {
    std::string toml = read_file_bytes(run.config);
    toml.replace(toml.find("[wire]"), 6, "[outer]\nsync_moments_every = " + std::to_string(k) + "\n[wire]");
    write_file(run.config, toml);
}

// The moments hash the host sent with the update of `round`, and the islands it averaged ("" when none).
std::pair<std::string, std::string> host_mean(const Process& host, int round) {
    const RunEvent e = first_event(host.events(), {.kind = "moments_averaged", .round = round});
    return {e.hash, e.detail};
}

// The moments hash an island holds after taking the mean of `round` ("" when it did not).
std::string island_mean(const Process& peer, int round) {
    return first_event(peer.events(), {.kind = "moments_taken", .round = round}).hash;
}

}  // namespace

TEST_CASE("DES-LOC: after a moments round every island holds the host's mean, and θ stays bit-identical") {
    Run run(4, 2);
    set_moments_every(run, 2);  // rounds 1 and 3 carry moments
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2, kEnv, {"--devices", "2", "--parallel", "zero3"});  // its moments are gathered and scattered
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2\n" + p2->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    INFO(host->log() << "\n--- peer 1\n" << p1->log() << "\n--- peer 2\n" << p2->log());
    for (int r : {1, 3}) {
        INFO("round " << r);
        const auto [hash, islands] = host_mean(*host, r);
        CHECK(islands == "0, 1");
        REQUIRE(hash.size() == 16);
        CHECK(island_mean(*p1, r) == hash);
        CHECK(island_mean(*p2, r) == hash);
        CHECK(p1->count({.kind = "moments_sent", .round = r}) == 1);
    }
    for (int r : {0, 2}) {  // no moments: nothing sent, nothing replaced
        CHECK(host_mean(*host, r).first.empty());
        CHECK(island_mean(*p1, r).empty());
        CHECK(p2->count({.kind = "moments_sent", .round = r}) == 0);
    }
    CHECK(p1->count({.kind = "moments_sent"}) == 2);
    CHECK(p2->count({.kind = "moments_sent"}) == 2);
    // θ is untouched by the moments: every island still ends every round with the host's.
    for (const Process* p : {p1.get(), p2.get()}) {
        CHECK(p->count({.kind = "round_applied"}) == 4);
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
    CHECK(host->count({.kind = "rejected"}) == 0);
}

TEST_CASE("DES-LOC: moments of the wrong size, with a NaN, for another round, too large, or no AdamW's are refused and change nothing") {
    Run run(2, 2);
    set_moments_every(run, 1);  // every round carries moments
    run.make_peer(1);
    run.make_peer(2);  // peer 2 is this test
    auto host = run.host();
    auto p1 = run.peer(1);
    HandPeer by_hand(run, 2);
    const std::size_t params = by_hand.join("by-hand");
    const protocol::RoundStart rs = by_hand.wait_round_start();
    auto send_moments = [&](std::vector<std::byte> blob) {
        by_hand.link->send_blob(by_hand.host_key, protocol::Type::moments, rs.round,
                                share_blob(std::move(blob)));
    };
    const std::vector<float> m(params, 1e-6f), v(params, 1e-7f);
    auto wait_rejected = [&](const std::string& detail) {
        const EventMatch rejected{.kind = "rejected", .peer = "by-hand", .type = "moments", .detail = detail};
        if (!by_hand.wait_host(*host, rejected, 1, 60)) FAIL(host->log());
    };
    // One value short: through the transfer's bound, refused by the decoder.
    send_moments(protocol::encode_moments(rs.round, std::span(m).first(params - 1), std::span(v).first(params - 1)));
    wait_rejected("the model's take " + std::to_string(protocol::moments_bytes(params)));
    // The right size with a NaN in v.
    std::vector<float> nan_v = v;
    nan_v[params / 2] = std::nanf("");
    send_moments(protocol::encode_moments(rs.round, m, nan_v));
    wait_rejected("v[" + std::to_string(params / 2) + "]");
    // A round it was not started on.
    send_moments(protocol::encode_moments(rs.round + 3, m, v));
    wait_rejected("moments for round " + std::to_string(rs.round + 3) + ", but this island was started on round");
    // More than m and v can hold: refused at the transfer's begin, before anything is allocated.
    std::vector<std::byte> big = protocol::encode_moments(rs.round, m, v);
    big.resize(big.size() + 4096);
    send_moments(std::move(big));
    if (!by_hand.wait_host(*host, {.kind = "transfer_refused"}, 1, 60)) FAIL(host->log());
    // Finite, v ≥ 0, and still not what AdamW makes of any gradients: one m beyond 1.165 sqrt(v)
    // (β 0.9 and 0.95), then a v whose sum passes grad_clip² (1) with m zero.
    std::vector<float> lying_m = m;
    lying_m[7] = 2e-3f;
    send_moments(protocol::encode_moments(rs.round, lying_m, v));
    wait_rejected("m = 0.002 with v = 1e-07 at value 7: AdamW keeps |m| within 1.165 sqrt(v)");
    send_moments(protocol::encode_moments(rs.round, std::vector<float>(params, 0.0f),
                                          std::vector<float>(params, 2.0f / static_cast<float>(params))));
    wait_rejected("sum of v = 2, above 1 and 1");
    CHECK(host->count({.kind = "rejected", .peer = "by-hand", .type = "moments"}) == 5);
    // Its Δ counts; its moments were all refused, so the mean holds the honest island's only.
    by_hand.send_grad(rs.round, std::vector<float>(params, 0.0f), 3.0 * 2 * 16);
    const std::optional<LinkEvent> update = by_hand.wait_event(protocol::Type::update, 120);
    REQUIRE(update);
    ByteReader reader(update->payload, "update");
    const protocol::UpdateMeta meta = protocol::decode_update(reader.bytes(1 << 16));
    CHECK(meta.islands == 2);
    REQUIRE(meta.moments_from.size() == 1);
    CHECK(meta.moments_from[0] != by_hand.island);
    by_hand.leave();  // the run goes on with peer 1 alone
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    CHECK(p1->wait(30) == 0);
    INFO(host->log() << "\n--- peer 1\n" << p1->log());
    const auto [hash, islands] = host_mean(*host, static_cast<int>(rs.round));
    CHECK(islands == std::to_string(meta.moments_from[0]));
    CHECK(island_mean(*p1, static_cast<int>(rs.round)) == hash);
    CHECK(p1->count({.kind = "round_applied"}) == 2);
    CHECK(p1->count({.kind = "theta_differs"}) == 0);
}
