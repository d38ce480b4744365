// tests/peers/test_desloc_run.cpp: DES-LOC (run.toml outer.sync_moments_every) across real processes:
// `archipelago host` and peers over CURVE on loopback. After every round that carries moments each
// island holds exactly the mean the host made (the hash both log), an island of two ZeRO-3 devices
// too, and θ stays bit-identical to the host's. Moments of the wrong size, with a NaN, for another
// round, or declaring more bytes than m and v hold are refused with the reason logged, and change
// nothing: the mean is made of the honest island's alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>

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

// The moments hash the host logged for `round`, and the islands it averaged ("" when it logged none).
std::pair<std::string, std::string> host_mean(const std::string& log, int round) {
    const std::regex line("round " + std::to_string(round) +
                          " averaged the AdamW moments of islands ([0-9, ]+) \\(weighted by tokens\\), moments ([0-9a-f]{16})");
    std::smatch m;
    if (!std::regex_search(log, m, line)) return {"", ""};
    return {m[2], m[1]};
}

// The moments hash an island logged after taking the mean of `round` ("" when it did not).
std::string island_mean(const std::string& log, int round) {
    const std::regex line("round " + std::to_string(round) + ": AdamW moments replaced by the mean of [0-9]+ islands, moments ([0-9a-f]{16})");
    std::smatch m;
    return std::regex_search(log, m, line) ? std::string(m[1]) : std::string();
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
    const std::string hl = host->log(), l1 = p1->log(), l2 = p2->log();
    INFO(hl << "\n--- peer 1\n" << l1 << "\n--- peer 2\n" << l2);
    for (int r : {1, 3}) {
        INFO("round " << r);
        const auto [hash, islands] = host_mean(hl, r);
        CHECK(islands == "0, 1");
        REQUIRE(hash.size() == 16);
        CHECK(island_mean(l1, r) == hash);
        CHECK(island_mean(l2, r) == hash);
        CHECK(l1.find("round " + std::to_string(r) + " sent AdamW moments") != std::string::npos);
    }
    for (int r : {0, 2}) {  // no moments: nothing sent, nothing replaced
        CHECK(host_mean(hl, r).first.empty());
        CHECK(island_mean(l1, r).empty());
        CHECK(l2.find("round " + std::to_string(r) + " sent AdamW moments") == std::string::npos);
    }
    CHECK(count(l1, "sent AdamW moments") == 2);
    CHECK(count(l2, "sent AdamW moments") == 2);
    // θ is untouched by the moments: every island still ends every round with the host's.
    CHECK(count(l1, "matches the host") == 4);
    CHECK(count(l2, "matches the host") == 4);
    CHECK(l1.find("differs") == std::string::npos);
    CHECK(l2.find("differs") == std::string::npos);
    CHECK(hl.find("moments ") != std::string::npos);
    CHECK(hl.find("rejected") == std::string::npos);
}

TEST_CASE("DES-LOC: moments of the wrong size, with a NaN, for another round or too large are refused and change nothing") {
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
                                std::make_shared<const std::vector<std::byte>>(std::move(blob)));
    };
    const std::vector<float> m(params, 1e-3f), v(params, 1e-6f);
    auto wait_host = [&](const std::string& needle, int times) {
        if (!by_hand.wait_host(*host, needle, times, 60)) FAIL(host->log());
    };
    // One value short: through the transfer's bound, refused by the decoder.
    send_moments(protocol::encode_moments(rs.round, std::span(m).first(params - 1), std::span(v).first(params - 1)));
    wait_host("the model's take " + std::to_string(protocol::moments_bytes(params)), 1);
    // The right size with a NaN in v.
    std::vector<float> nan_v = v;
    nan_v[params / 2] = std::nanf("");
    send_moments(protocol::encode_moments(rs.round, m, nan_v));
    wait_host("v[" + std::to_string(params / 2) + "]", 1);
    // A round it was not started on.
    send_moments(protocol::encode_moments(rs.round + 3, m, v));
    wait_host("moments for round " + std::to_string(rs.round + 3) + ", but this island was started on round", 1);
    // More than m and v can hold: refused at the transfer's begin, before anything is allocated.
    std::vector<std::byte> big = protocol::encode_moments(rs.round, m, v);
    big.resize(big.size() + 4096);
    send_moments(std::move(big));
    wait_host("refused a transfer", 1);
    CHECK(count(host->log(), "rejected a moments message from by-hand") == 3);
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
    const std::string hl = host->log(), l1 = p1->log();
    INFO(hl << "\n--- peer 1\n" << l1);
    const auto [hash, islands] = host_mean(hl, static_cast<int>(rs.round));
    CHECK(islands == std::to_string(meta.moments_from[0]));
    CHECK(island_mean(l1, static_cast<int>(rs.round)) == hash);
    CHECK(count(l1, "matches the host") == 2);
}
