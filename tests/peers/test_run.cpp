// tests/peers/test_run.cpp: DiLoCo across processes, as a user runs it: `archipelago host` and
// `archipelago peer` processes on 127.0.0.1 with real keys and CURVE. Every island ends each round
// bit-identical to the host (hash), also an island of two ZeRO-3 devices; a peer SIGKILLed in the
// middle of sending its pseudo-gradient does not stop the round and later rejoins in sync; a host
// killed and restarted from its checkpoint loses at most one round, and screens against the norms it
// remembered; a version 1 host.state is still read and a corrupt one refused; bad protocol input is rejected while the run goes on; and a
// capture of the wire holds no plaintext of the protocol.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstring>

#include "compression/codec.h"
#include "core/checkpoint.h"
#include "core/corpus.h"
#include "core/gpt2.h"
#include "core/hf_export.h"
#include "core/tokenizer.h"
#include "kernels/cpu/cpu_backend.h"
#include "peers/diloco/global_model.h"
#include "peers/run_config.h"
#include "net/invite.h"
#include "net/keys.h"
#include "net/peer_socket.h"
#include "peers/net_link.h"
#include "peers/protocol.h"
#include "tests/core/temp_dir.h"
#include "tests/net/tcp_recorder.h"
#include "tests/peers/process.h"
#include "tests/peers/run_fixture.h"
#include "tests/test_bytes.h"

using namespace arch;
using arch::test::free_port;
using arch::test::Process;
using namespace arch::test;

namespace {

// run.toml with model.init (or another [model] key) naming `path` (the host's own file or folder).
void set_model_init(const Run& run, const std::string& path, const std::string& key = "init") {
    std::string text = read_text_file(run.config);
    const std::size_t at = text.find("[model]\n");
    REQUIRE(at != std::string::npos);
    for (const char* k : {"\ninit = ", "\ninit_hf = "})
        if (const std::size_t old = text.find(k); old != std::string::npos) text.erase(old + 1, text.find('\n', old + 1) - old);
    text.insert(at + 8, key + " = \"" + path + "\"\n");
    write_file(run.config, text);
}

}  // namespace


TEST_CASE("islands end every round bit-identical to the host; the wire holds no plaintext") {
    Run run(3, 2);
    net::test::TcpRecorder relay(static_cast<uint16_t>(run.port));
    run.make_peer(1, relay.endpoint());  // peer 1 reaches the host through a recording relay
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2, kEnv, {"--devices", "2", "--parallel", "zero3"});  // an island of two devices
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2\n" + p2->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    CHECK(host->count({.kind = "finished", .round = 3}) == 1);
    CHECK(p2->log().find("2 device(s) (zero3)") != std::string::npos);  // what it tells its user it runs on
    for (int r = 0; r < 3; ++r) {
        INFO("round " << r);
        CHECK(p1->count({.kind = "round_applied", .round = r, .islands = 2}) == 1);
        CHECK(p2->count({.kind = "round_applied", .round = r, .islands = 2}) == 1);
    }
    CHECK(p1->count({.kind = "theta_differs"}) + p2->count({.kind = "theta_differs"}) == 0);

    const std::vector<std::byte> wire = relay.recorded();
    CHECK(wire.size() > 3'000'000);  // three fp32 pseudo-gradients of ~2.9 MB went through it
    const uint64_t run_id = net::Invite::load(run.invite(1)).run_id;
    CHECK_FALSE(contains_bytes(wire, &run_id, 8));
    // Six bytes or more: a 4-byte string turns up by chance in megabytes of ciphertext (~0.1%).
    std::byte header[net::kHeaderBytes];
    net::encode_header(net::Header{}, header);
    CHECK_FALSE(contains_bytes(wire, header, 6));  // every frame starts with magic and version
    CHECK_FALSE(contains_bytes(wire, "steps_per_round", 15));
    const uint8_t codec_header[6] = {'A', 'P', 'G', 'C', 1, 1};  // the codec's magic, version 1, fp32
    CHECK_FALSE(contains_bytes(wire, codec_header, 6));
}

TEST_CASE("a peer SIGKILLed mid-send does not stop the round; restarted, it rejoins in sync") {
    // Rounds take a tenth of a second or so with one island: twelve leave the restarted peer (a
    // process start, a hello, the state, its data) time to be back before the run ends.
    constexpr int kRounds = 12;
    Run run(kRounds, 2);
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2, kEnv, {"--fault-kill-after-chunks", "1"});  // dies after the first chunk of its pseudo-gradient
    if (p2->wait(180) != -SIGKILL) FAIL(host->log() + "\n--- peer 2\n" + p2->log());
    const auto killed = std::chrono::steady_clock::now();
    if (!host->wait_event({.kind = "round_started", .round = 1}, 120)) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    CHECK(seconds < 30 + 2 + 5);  // round deadline + heartbeat timeout + slack
    CHECK(host->count({.kind = "dropped", .peer = "peer-2", .type = "disconnected"}) >= 1);

    auto p2_again = run.peer(2);
    CHECK(p2_again->wait_event({.kind = "synced"}, 120));
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 2\n" + p2_again->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2_again->wait(30) == 0);
    // After its rejoin, every update it applied left it with the host's θ.
    INFO(host->log() + "\n--- peer 2, restarted\n" + p2_again->log());
    CHECK(p2_again->count({.kind = "round_applied", .round = kRounds - 1}) == 1);
    CHECK(p2_again->count({.kind = "theta_differs"}) == 0);
}

TEST_CASE("a host killed and restarted from its checkpoint loses at most one round") {
    // Rounds of a few tens of milliseconds: twenty of them leave the test a second or more to kill the
    // host after its first checkpoint from round 2 on, and before the run ends.
    constexpr int kRounds = 20;
    Run run(kRounds, 2);
    run.make_peer(1);
    run.make_peer(2);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    auto host2 = run.restart_host_after_checkpoint(*host, *p1);
    if (host2->wait(300) != 0) FAIL(host2->log() + "\n--- peer 1\n" + p1->log());
    // The second host started from round 2 (or later, if round 2 finished before the kill).
    const RunEvent resumed = first_event(host2->events(), {.kind = "resumed"});
    CHECK(resumed.round >= 2);
    CHECK(resumed.round < kRounds);  // killed before the run ended
    CHECK(host2->count({.kind = "finished", .round = kRounds}) == 1);
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    CHECK(p1->count({.kind = "round_applied", .round = kRounds - 1, .islands = 2}) == 1);
    CHECK(p2->count({.kind = "round_applied", .round = kRounds - 1, .islands = 2}) == 1);
}

TEST_CASE("a host.state of version 1 (checked with BLAKE2b) is still read; a corrupt one is refused") {
    Run run(1, 1);
    run.make_peer(1);
    {
        auto host = run.host();
        auto p1 = run.peer(1);
        if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
        CHECK(p1->wait(30) == 0);
    }
    // The version 3 file the run wrote, turned into version 1: without the screen's norms (a u32 count
    // and its f64s after the island map), its magic, and BLAKE2b-256 in place of XXH3-128 as the
    // checksum of everything before it (a u32 length, then the hex).
    const std::string path = run.dir.file("host") + "/host.state";
    const std::vector<std::byte> v3 = read_file(path);
    REQUIRE(v3.size() > 8 + 4 + 32);
    REQUIRE(std::memcmp(v3.data(), "ARCHHST3", 8) == 0);
    ByteReader header(v3, "host.state");
    header.raw(8);
    header.u64();
    for (uint32_t i = 0, islands = header.u32(); i < islands; ++i) {
        header.str(64);
        header.u32();
    }
    const std::size_t at = v3.size() - header.remaining();
    const uint32_t norms = header.u32();
    std::vector<std::byte> v1(v3.begin(), v3.end() - (4 + 32));
    v1.erase(v1.begin() + static_cast<long>(at), v1.begin() + static_cast<long>(at + 4 + 8 * norms));
    v1[7] = std::byte{'1'};
    const std::string blake = diloco::hash_bytes(std::as_bytes(std::span(v1)));
    const uint32_t length = static_cast<uint32_t>(blake.size());
    const auto* l = reinterpret_cast<const std::byte*>(&length);
    v1.insert(v1.end(), l, l + 4);
    const std::vector<std::byte> hex = arch::test::text_bytes(blake);
    v1.insert(v1.end(), hex.begin(), hex.end());
    write_file(path, arch::test::text_of(v1));
    {
        auto host = run.host();
        CHECK(host->wait_event({.kind = "resumed", .round = 1}, 60));
        host->kill(SIGTERM);
        host->wait(60);
    }
    v1[v1.size() / 2] ^= std::byte{1};  // a bit of the state flipped
    write_file(path, arch::test::text_of(v1));
    auto host = run.host();
    CHECK(host->wait(60) != 0);
    CHECK(host->log().find("checksum mismatch") != std::string::npos);  // what the user is told
    CHECK(host->count({.kind = "waiting"}) == 0);  // it refused to start
}

TEST_CASE("bad protocol input is rejected and logged; the run goes on unchanged") {
    Run run(2, 2);
    run.make_peer(1);
    run.make_peer(2);  // peer 2 is this test, speaking the protocol by hand
    auto host = run.host();
    auto p1 = run.peer(1);
    HandPeer by_hand(run, 2);
    PeerLink& link = *by_hand.link;
    const std::string hostkey = by_hand.host_key;
    auto wait_event = [&](protocol::Type type, double timeout_s) { return by_hand.wait_event(type, timeout_s); };

    // A wrong protocol version, then garbage, then a real hello.
    protocol::Hello hello;
    hello.name = "by-hand";
    hello.protocol_version = 99;
    link.send(hostkey, protocol::Type::hello, 0, protocol::encode(hello));
    link.send(hostkey, protocol::Type::hello, 0, arch::test::text_bytes("garbage that is not a hello"));
    REQUIRE(host->wait_event({.kind = "rejected", .type = "hello", .detail = "protocol version 99"}, 30));
    REQUIRE(host->wait_event({.kind = "rejected", .type = "hello"}, 30, 2));
    REQUIRE(host->count({.kind = "rejected", .type = "hello"}) == 2);
    const std::size_t params = by_hand.join("by-hand");  // now a real hello: welcome, state, in sync
    std::optional<LinkEvent> start = wait_event(protocol::Type::round_start, 60);
    REQUIRE(start);
    const protocol::RoundStart rs = protocol::decode_round_start(start->payload);

    auto rejected = [&](const std::string& detail) {
        return EventMatch{.kind = "rejected", .peer = "by-hand", .type = "pseudo_grad", .detail = detail};
    };
    const std::size_t n = 1;  // the host checks the size against the model and refuses
    auto send_grad = [&](uint64_t round, std::vector<float> delta, bool poke_nan, const char* codec = "fp32") {
        std::vector<std::byte> payload = compression::make_codec(codec)->encode(delta);
        if (poke_nan) {
            const float nan = std::nanf("");
            std::memcpy(payload.data() + payload.size() - sizeof(float), &nan, sizeof(float));
        }
        ByteWriter w;
        w.bytes(protocol::encode(protocol::PseudoGradMeta{round, 32.0, 1.0f, 3, 1.0f}));
        w.bytes(payload);
        link.send_blob(hostkey, protocol::Type::pseudo_grad, round, share_blob(w.take()));
    };
    send_grad(rs.round + 7, std::vector<float>(n, 0.5f), false);  // wrong round
    REQUIRE(by_hand.wait_host(*host, rejected("pseudo-gradient for round " + std::to_string(rs.round + 7)), 1));
    send_grad(rs.round, std::vector<float>(n, 0.5f), false);  // wrong size
    REQUIRE(by_hand.wait_host(*host, rejected("the model has"), 1));
    send_grad(rs.round, std::vector<float>(params, 0.5f), true);  // the right size, and a NaN in it
    REQUIRE(by_hand.wait_host(*host, rejected("is not finite"), 1));
    send_grad(rs.round, std::vector<float>(params, 0.5f), false, "int8:block=256");  // not the run's wire.codec (fp32)
    REQUIRE(by_hand.wait_host(*host, rejected("encoded as int8 (block 256); the run's wire.codec is fp32"), 1));
    CHECK(host->count(rejected("")) == 4);
    by_hand.leave();  // the hand-made peer leaves: the run goes on with peer 1 alone
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p1->count({.kind = "round_applied"}) == 2);
    CHECK(p1->count({.kind = "theta_differs"}) == 0);
}

TEST_CASE("a peer sending a huge, then a 1e30, then an overweighted pseudo-gradient cannot poison the run") {
    // The reference: the same run with the three honest islands only, on the same data (a run of 4
    // islands, so each honest island gets the chunks it gets below; round 0 starts at join_timeout_s).
    double honest_val = 0;
    {
        Run ref(3, 4, 128, "join_timeout_s = 4\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
        for (int i = 1; i <= 3; ++i) ref.make_peer(i);
        auto host = ref.host();
        std::vector<std::unique_ptr<Process>> peers;
        for (int i = 1; i <= 3; ++i) peers.push_back(ref.peer(i));
        if (host->wait(300) != 0) FAIL(host->log());
        for (auto& p : peers) CHECK(p->wait(30) == 0);
        honest_val = last_val_loss(*host);
    }

    Run run(3, 4);
    for (int i = 1; i <= 4; ++i) run.make_peer(i);  // peer 4 is this test, and it lies
    auto host = run.host();
    std::vector<std::unique_ptr<Process>> peers;
    for (int i = 1; i <= 3; ++i) peers.push_back(run.peer(i));
    HandPeer liar(run, 4);
    const std::size_t params = liar.join("liar");
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round << "\n" << host->log());
        const protocol::RoundStart rs = liar.wait_round_start();
        std::vector<float> delta(params, 1.0f);  // far above an honest Δ (a few 1e-3 per value)
        double tokens = 3.0 * 2 * 16;             // what H x B x T allows
        if (round == 1) std::fill(delta.begin(), delta.end(), 1e30f);  // finite, and enormous
        if (round == 2) {
            std::fill(delta.begin(), delta.end(), 1e-3f);
            tokens = 1e12;  // claims to outweigh everyone
        }
        liar.send_grad(rs.round, delta, tokens);
        const std::optional<LinkEvent> update = liar.wait_event(protocol::Type::update, 120);
        REQUIRE(update);
        ByteReader ur(update->payload, "update");
        const protocol::UpdateMeta um = protocol::decode_update(ur.bytes(4096));
        CHECK(um.islands == 4);  // the liar was counted, not dropped: its Δ was clipped and its weight capped
        CHECK(std::isfinite(um.val_loss));
        liar.report(um.round + 1, um.theta_hash);
    }
    if (host->wait(300) != 0) FAIL(host->log());
    INFO(host->log());
    CHECK(host->count({.kind = "screened", .type = "clipped"}) >= 2);
    CHECK(host->count({.kind = "screened", .peer = "liar", .type = "clipped"}) >= 2);
    CHECK(host->count({.kind = "weight_capped", .peer = "liar"}) == 1);
    for (auto& p : peers) {
        CHECK(p->wait(30) == 0);
        CHECK(p->count({.kind = "round_applied"}) == 3);  // the honest islands stayed in the run, in sync
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
    const double val = last_val_loss(*host);
    INFO("val loss " << val << " with the liar, " << honest_val << " without it");
    CHECK(val == Approx(honest_val).epsilon(0.02));
    const ModelConfig config = read_checkpoint_config(run.dir.file("host/model.bin"));
    const std::vector<float> theta = read_checkpoint_params(run.dir.file("host/model.bin"), config);
    CHECK(std::all_of(theta.begin(), theta.end(), [](float x) { return std::isfinite(x); }));
}

TEST_CASE("a host restarted from its checkpoint screens against the norms it remembered") {
    // Two islands driven by hand: two rounds of small Δs give the screen its history (four norms), the
    // host is stopped and started again, then one island sends a Δ 50 times longer. With two Δs a round
    // there is no median, and the bound the inner optimizer allows is above it: only the norms the
    // checkpoint kept can clip it.
    Run run(6, 2);
    run.make_peer(1);
    run.make_peer(2);
    // One island's Δ for its next round, driven until the host has it (its link is polled only here).
    auto round_of = [](HandPeer& p, float value, std::size_t params) {
        const protocol::RoundStart rs = p.wait_round_start();
        p.send_grad(rs.round, std::vector<float>(params, value), 3.0 * 2 * 16);
        const auto end = Clock::real().now() + std::chrono::seconds(60);
        while (p.link->stats(p.host_key).sending > 0 && Clock::real().now() < end) p.link->poll(20);
        REQUIRE(p.link->stats(p.host_key).sending == 0);
    };
    auto settle = [](HandPeer& p) {
        const std::optional<LinkEvent> update = p.wait_event(protocol::Type::update, 120);
        REQUIRE(update);
        ByteReader ur(update->payload, "update");
        const protocol::UpdateMeta um = protocol::decode_update(ur.bytes(4096));
        p.report(um.round + 1, um.theta_hash);
    };
    {
        auto host = run.host();
        HandPeer a(run, 1), b(run, 2);
        const std::size_t params = a.join("a");
        b.join("b");
        for (int round = 0; round < 2; ++round) {
            round_of(a, 1e-4f, params);
            round_of(b, 1e-4f, params);
            settle(a);
            settle(b);
        }
        host->kill(SIGTERM);
        if (host->wait(60) != 0) FAIL(host->log());
        CHECK(host->count({.kind = "screened"}) == 0);
    }
    auto host = run.host();
    if (!host->wait_event({.kind = "resumed"}, 60)) FAIL(host->log());
    INFO(host->log());
    CHECK(host->log().find("4 pseudo-gradient norms to screen against") != std::string::npos);
    HandPeer a(run, 1), b(run, 2);
    const std::size_t params = a.join("a");
    b.join("b");
    round_of(a, 1e-4f, params);
    round_of(b, 5e-3f, params);
    CHECK(host->wait_event({.kind = "screened", .peer = "b", .type = "clipped"}, 60));
    CHECK(host->count({.kind = "screened", .peer = "a"}) == 0);
    host->kill(SIGTERM);
    host->wait(60);
}

TEST_CASE("with no median to screen against, a 1e30 pseudo-gradient is clipped to the bound the inner optimizer allows") {
    // Two islands and no history: fewer Δs than a median needs. The honest island alone is the
    // reference. The bound is loose (the worst any gradients could do, twice over), so the liar still
    // costs some progress, but the run keeps learning: its val loss falls every round it is measured,
    // within 5% of the honest run's.
    std::vector<double> honest_val;
    {
        Run ref(3, 2, 128, "join_timeout_s = 4\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n");
        ref.make_peer(1);
        auto host = ref.host();
        auto p1 = ref.peer(1);
        if (host->wait(300) != 0) FAIL(host->log());
        CHECK(p1->wait(30) == 0);
        for (const RunEvent& e : host->events())
            if (e.kind == "round_finished") honest_val.push_back(e.val_loss);
    }
    REQUIRE(honest_val.size() == 3);
    Run run(3, 2);
    run.make_peer(1);
    run.make_peer(2);  // peer 2 is this test, and it lies
    auto host = run.host();
    auto p1 = run.peer(1);
    HandPeer liar(run, 2);
    const std::size_t params = liar.join("liar");
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round << "\n" << host->log());
        const protocol::RoundStart rs = liar.wait_round_start();
        liar.send_grad(rs.round, std::vector<float>(params, round == 1 ? -1e30f : 1e30f), 3.0 * 2 * 16);
        const std::optional<LinkEvent> update = liar.wait_event(protocol::Type::update, 120);
        REQUIRE(update);
        ByteReader ur(update->payload, "update");
        const protocol::UpdateMeta um = protocol::decode_update(ur.bytes(4096));
        CHECK(um.islands == 2);
        liar.report(um.round + 1, um.theta_hash);
    }
    if (host->wait(300) != 0) FAIL(host->log());
    CHECK(p1->wait(30) == 0);
    CHECK(host->count({.kind = "screened", .peer = "liar", .type = "clipped"}) == 3);
    CHECK(host->count({.kind = "screened", .peer = "peer-1"}) == 0);  // the honest Δ is far inside the bound
    std::vector<double> val;
    for (const RunEvent& e : host->events())
        if (e.kind == "round_finished") val.push_back(e.val_loss);
    REQUIRE(val.size() == 3);
    REQUIRE(val.back() >= 0);  // the run's last θ is always evaluated
    double before = measured_val_losses(*host).front();  // the starting θ's
    for (int r = 0; r < 3; ++r) {
        INFO("round " << r << ": val loss " << val[r] << " with the liar, " << honest_val[r] << " without it");
        if (val[r] < 0) continue;  // passed over: the evaluation of an earlier θ was under way
        if (honest_val[r] >= 0) CHECK(val[r] <= 1.05 * honest_val[r]);
        CHECK(val[r] < before);
        before = val[r];
    }
    const ModelConfig config = read_checkpoint_config(run.dir.file("host/model.bin"));
    const std::vector<float> theta = read_checkpoint_params(run.dir.file("host/model.bin"), config);
    CHECK(std::all_of(theta.begin(), theta.end(), [](float x) { return std::isfinite(x) && std::fabs(x) < 100; }));
}

TEST_CASE("a pseudo-gradient that spends its norm on a few values is clamped value by value") {
    // Two islands. The liar's Δ is zero but for 16 values of 1: a norm of 4, inside the ceiling the
    // inner optimizer allows this model's Δ, so the norm screen lets it through. Each value is about a
    // hundred times what one value can move in a round (2 H lr (1.165 + wd (max |θ| + ...)), about
    // 0.01 here): the per-value bound clamps it, where the Δ is held encoded (a sync round) and where it
    // is decoded whole (async: each Δ its own update).
    bool async = false;
    SECTION("sync") {}
    SECTION("async") { async = true; }
    Run run(3, 2);
    if (async) run.make_async();
    run.make_peer(1);
    run.make_peer(2);  // peer 2 is this test, and it lies
    auto host = run.host();
    auto p1 = run.peer(1);
    HandPeer liar(run, 2);
    const std::size_t params = liar.join("liar");
    const std::vector<float> theta0 = liar.theta;
    std::vector<std::size_t> spiked;
    for (std::size_t k = 0; k < 16; ++k) spiked.push_back(1000 + 97 * k);
    std::vector<float> spike(params, 0.0f);
    for (const std::size_t i : spiked) spike[i] = 1.0f;
    int sent = 0;
    for (int round = 0; round < 3; ++round) {
        INFO("round " << round << "\n" << host->log());
        // Async: three updates in all, so the run may end before the liar's third round starts.
        const std::optional<LinkEvent> start = liar.wait_event(protocol::Type::round_start, 60);
        if (async && !start) break;
        REQUIRE(start);
        const protocol::RoundStart rs = protocol::decode_round_start(start->payload);
        liar.send_grad(rs.round, spike, 3.0 * 2 * 16);
        ++sent;
        std::optional<LinkEvent> update;
        for (int i = 0; i < 1200 && !update && host->running(); ++i) update = liar.wait_event(protocol::Type::update, 0.1);
        if (async && !update) break;  // the honest island's Δ took the last update
        REQUIRE(update);
        ByteReader ur(update->payload, "update");
        const protocol::UpdateMeta um = protocol::decode_update(ur.bytes(4096));
        if (!async) CHECK(um.islands == 2);
        liar.report(um.round + 1, um.theta_hash);
    }
    liar.leave();
    if (host->wait(300) != 0) FAIL(host->log());
    CHECK(p1->wait(30) == 0);
    INFO(host->log());
    CHECK(sent >= (async ? 1 : 3));
    // Async: the honest island's Δ can make the run's last update while the liar's last one is on its
    // way; the run then ends without reading it, so that one is not screened.
    const int clamped = host->count({.kind = "screened", .peer = "liar", .type = "clamped"});
    if (async) CHECK((clamped == sent || clamped == sent - 1));
    else CHECK(clamped == sent);
    CHECK(clamped >= 1);
    CHECK(host->count({.kind = "screened", .peer = "liar", .type = "clipped"}) == 0);  // the norm alone passed
    CHECK(host->count({.kind = "screened", .peer = "peer-1"}) == 0);  // an honest Δ is inside every bound
    CHECK(host->log().find("16 values beyond") != std::string::npos);
    // Unclamped, each spiked value of θ would move by about 0.35 a round (the outer step of half the
    // mean of 1 and 0); clamped, by the outer step of at most the bound.
    const ModelConfig config = read_checkpoint_config(run.dir.file("host/model.bin"));
    const std::vector<float> theta = read_checkpoint_params(run.dir.file("host/model.bin"), config);
    double moved = 0;
    for (const std::size_t i : spiked) moved = std::max(moved, static_cast<double>(std::fabs(theta[i] - theta0[i])));
    WARN("the spiked values of θ moved by at most " << moved << " in 3 rounds");
    CHECK(moved < 0.1);
    CHECK(std::all_of(theta.begin(), theta.end(), [](float x) { return std::isfinite(x); }));
}

TEST_CASE("async: pseudo-gradients for another round, or sent twice, are refused; the run goes on") {
    Run run(4, 2);
    run.make_async();
    run.make_peer(1);
    run.make_peer(2);  // peer 2 is this test
    auto host = run.host();
    auto p1 = run.peer(1);
    HandPeer replayer(run, 2);
    const std::vector<float> zero(replayer.join("replayer"), 0.0f);
    const protocol::RoundStart rs = replayer.wait_round_start();
    replayer.send_grad(rs.round + 5, zero, 32.0);  // a round it was not started on
    const EventMatch rejected{.kind = "rejected", .peer = "replayer", .type = "pseudo_grad"};
    REQUIRE(replayer.wait_host(*host, rejected, 1, 60));
    replayer.send_grad(rs.round, zero, 32.0);  // the one it was asked for: applied
    REQUIRE(replayer.wait_event(protocol::Type::update, 60));
    replayer.send_grad(rs.round, zero, 32.0);  // the same again, as after a reconnect: refused (the host has moved it on)
    REQUIRE(replayer.wait_host(*host, rejected, 2, 60));
    const std::vector<RunEvent> events = host->events();
    CHECK(count_events(events, rejected) == 2);
    CHECK(count_events(events, {.kind = "rejected", .round = static_cast<int64_t>(rs.round) + 5, .peer = "replayer"}) == 1);
    CHECK(count_events(events, {.kind = "rejected", .round = static_cast<int64_t>(rs.round), .peer = "replayer"}) == 1);
    replayer.leave();  // the replayer leaves: the run goes on with peer 1
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    if (p1->wait(30) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
    CHECK(p1->count({.kind = "theta_differs"}) == 0);
}

TEST_CASE("trimmed with a dropout below its minimum: the host says so, keeps serving, and finishes") {
    Run run(3, 3);
    {  // trimmed mean with trim 1 needs 3 pseudo-gradients
        std::string toml = read_file_bytes(run.config);
        toml.replace(toml.find("[wire]"), 6, "[outer]\naggregator = \"trimmed:trim=1\"\n[wire]");
        write_file(run.config, toml);
    }
    for (int i = 1; i <= 3; ++i) run.make_peer(i);
    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2);
    auto p3 = run.peer(3, kEnv, {"--fault-kill-after-chunks", "1"});  // dies in the middle of its first pseudo-gradient
    if (p3->wait(180) != -SIGKILL) FAIL(host->log() + "\n--- peer 3\n" + p3->log());
    if (!host->wait_event({.kind = "round_restarted", .detail = "needs at least 3"}, 120)) FAIL(host->log());
    auto p3_again = run.peer(3);  // back: the round can close with three
    if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 3\n" + p3_again->log());
    CHECK(host->count({.kind = "finished", .round = 3}) == 1);
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    CHECK(p3_again->wait(30) == 0);
}

TEST_CASE("model.init and init_hf: round 0 starts from the host's checkpoint, which reaches the peer over the link; a wrong one is refused") {
    Run run(1, 1);
    run.make_peer(1);
    const RunConfig c = load_run_config(run.config);
    const ModelConfig model = run_model_config(c, Tokenizer::load(ensure_bundled_corpus().tokenizer_path).vocab_size());
    auto backend = make_cpu_backend();
    GPT2 gpt(model, *backend);
    gpt.init_weights(99);  // not the run's seed: θ can only come from the file
    std::vector<float> theta(gpt.num_params());
    gpt.get_params(theta);
    for (std::size_t k = 0; k < theta.size(); k += 7) theta[k] += 0.25f;
    const std::string ckpt = run.dir.file("warm.bin");
    write_checkpoint(ckpt, model, theta);
    const std::string expected = diloco::hash_floats(theta).substr(0, 12);

    SECTION("the peer syncs to the checkpoint's θ") {
        set_model_init(run, ckpt);
        auto host = run.host();
        auto p1 = run.peer(1);
        if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
        CHECK(p1->wait(30) == 0);
        const RunEvent warm = first_event(host->events(), {.kind = "warm_start", .round = 0});
        CHECK(warm.detail == ckpt);
        CHECK(warm.theta == expected);
        CHECK(first_event(p1->events(), {.kind = "synced", .round = 0}).theta == expected);
        CHECK(p1->count({.kind = "round_applied"}) == 1);
    }
    SECTION("model.init_hf: the same θ from a Hugging Face folder") {
        const std::string folder = run.dir.file("hf");
        export_hf_gpt2(folder, model, theta);
        set_model_init(run, folder, "init_hf");
        auto host = run.host();
        auto p1 = run.peer(1);
        if (host->wait(300) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log());
        CHECK(p1->wait(30) == 0);
        const RunEvent warm = first_event(host->events(), {.kind = "warm_start", .round = 0});
        CHECK(warm.detail == folder);
        CHECK(warm.theta == expected);
        CHECK(first_event(p1->events(), {.kind = "synced", .round = 0}).theta == expected);
    }
    SECTION("a checkpoint of another model, or a truncated one, stops the host before it serves") {
        ModelConfig other = model;
        other.channels = 64;
        GPT2 small(other, *backend);
        small.init_weights(1);
        std::vector<float> small_theta(small.num_params());
        small.get_params(small_theta);
        const std::string wrong = run.dir.file("wrong.bin");
        write_checkpoint(wrong, other, small_theta);
        std::vector<std::byte> cut = read_file(ckpt);
        cut.resize(cut.size() - 100);
        const std::string truncated = run.dir.file("truncated.bin");
        write_file(truncated, arch::test::text_of(cut));
        for (const std::string& bad : {wrong, truncated}) {
            INFO(bad);
            set_model_init(run, bad);
            auto host = run.host();
            CHECK(host->wait(60) != 0);
            CHECK(host->log().find("model.init: checkpoint '" + bad + "'") != std::string::npos);
            CHECK_FALSE(file_exists(run.dir.file("host") + "/host.state"));
        }
        const std::string folder = run.dir.file("hf-small");
        export_hf_gpt2(folder, other, small_theta);
        set_model_init(run, folder, "init_hf");
        auto host = run.host();
        CHECK(host->wait(60) != 0);
        CHECK(host->log().find("model.init_hf: '" + folder + "' holds a L1 C64") != std::string::npos);
    }
}
