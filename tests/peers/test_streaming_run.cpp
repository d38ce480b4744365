// tests/peers/test_streaming_run.cpp: Streaming DiLoCo (run.mode = "streaming") as real processes:
// a host and three peers over CURVE on loopback. Every island ends every round bit-identical to the
// host, fragment by fragment; each sends only its round's fragment (P-fold fewer bytes per sync);
// each merges the update only after its τ overlapped steps; and the val loss falls.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "compression/codec.h"
#include "core/corpus.h"
#include "core/tokenizer.h"
#include "peers/run_config.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

namespace {

constexpr int kRounds = 3, kFragments = 2, kUpdates = kRounds * kFragments;

std::string streaming_toml(const Run& run) {
    return "[run]\nname = \"stream\"\nrounds = " + std::to_string(kRounds) + "\nislands = 3\nmode = \"streaming\"\n"
           "bind = \"tcp://127.0.0.1:" + std::to_string(run.port) + "\"\ncheckpoint_dir = \"" + run.dir.file("host") +
           "\"\n[model]\nconfig = \"tiny\"\nlayers = 2\nchannels = 32\nheads = 2\nmax_seq_len = 16\n"
           "[inner]\nsteps_per_round = 6\nbatch = 2\nseq_len = 16\nlr = 1e-3\nwarmup = 1\nval_batches = 2\n"
           "[streaming]\nfragments = " + std::to_string(kFragments) + "\ntau = 1\nalpha = 0.5\n"
           "[wire]\ncodec = \"fp4\"\ndown_codec = \"fp4\"\n"
           "[deadlines]\njoin_timeout_s = 60\nround_timeout_s = 30\nheartbeat_timeout_s = 2\n";
}

// "round R updated fragment P (... islands), fragment θ HASH" in the host's log: R -> HASH.
}  // namespace

TEST_CASE("streaming: every island matches the host fragment by fragment, sends one fragment a round, merges after τ") {
    Run run(kRounds, 3);
    const std::string toml = streaming_toml(run);
    write_file(run.config, toml);
    for (int i = 1; i <= 3; ++i) run.make_peer(i);
    auto host = run.host();
    std::vector<std::unique_ptr<Process>> peers;
    for (int i = 1; i <= 3; ++i) peers.push_back(run.peer(i));
    std::string all;
    const bool ok = host->wait(300) == 0;
    for (auto& p : peers) CHECK(p->wait(30) == 0);
    all = "--- host\n" + host->log();
    for (auto& p : peers) all += "\n--- peer\n" + p->log();
    INFO(all);
    REQUIRE(ok);
    CHECK(host->count({.kind = "finished", .round = kUpdates}) == 1);

    // θ's hash after each update, and the fragment it updated, as the host made them.
    std::map<int64_t, RunEvent> host_rounds;
    for (const RunEvent& e : host->events())
        if (e.kind == "round_finished") host_rounds[e.round] = e;
    REQUIRE(host_rounds.size() == kUpdates);

    // What one fragment's fp4 Δ takes on the wire, from the model the host and peers build.
    const RunConfig c = parse_run_config(toml, "test");
    const PreparedCorpus corpus = ensure_bundled_corpus();
    const ModelConfig model = run_model_config(c, Tokenizer::load(corpus.tokenizer_path).vocab_size());
    const std::vector<diloco::Fragment> fragments = run_fragments(c, model);
    REQUIRE(fragments.size() == kFragments);
    const auto codec = compression::make_codec("fp4");
    const std::size_t whole = codec->encode(std::vector<float>(ParamLayout(model).num_params(), 1.0f)).size();

    for (auto& p : peers) {
        const std::vector<RunEvent> events = p->events();
        for (int r = 0; r < kUpdates; ++r) {
            INFO("round " << r);
            const int f = r % kFragments;
            CHECK(host_rounds.at(r).fragment == f);
            // Bit-identical: θ's hash after the update is the host's, with the fragment the host updated.
            const RunEvent applied = first_event(events, {.kind = "round_applied", .round = r, .islands = 3});
            CHECK(applied.fragment == f);
            CHECK(applied.theta == host_rounds.at(r).theta);
            // Only the round's fragment travels: its fp4 size, about 1/P of the whole θ's.
            const RunEvent sent = first_event(events, {.kind = "sent", .round = r});
            const std::size_t bytes = codec->encode(std::vector<float>(fragments[f].size, 1.0f)).size();
            CHECK(sent.fragment == f);
            CHECK(sent.bytes == static_cast<int64_t>(bytes));
            CHECK(bytes < whole * 0.6);
        }
        // A round after the first trains H / P − τ steps before its send: the τ step was the round's start.
        CHECK(std::any_of(events.begin(), events.end(),
                          [](const RunEvent& e) { return e.kind == "sent" && e.fragment == 1 && e.steps == 2; }));
        CHECK(count_events(events, {.kind = "theta_differs"}) == 0);
        // Each update but the last waits for the island's τ = 1 step after its send; the last has none.
        int after_one = 0, after_none = 0;
        for (const RunEvent& e : events) {
            after_one += e.kind == "merged" && e.steps == 1;
            after_none += e.kind == "merged" && e.steps == 0;
        }
        CHECK(after_one == kUpdates - 1);
        CHECK(after_none == 1);
    }
    // And the run learns: the host's val loss after the last update is below the starting θ's.
    const std::vector<double> val = measured_val_losses(*host);
    REQUIRE(val.size() >= 2);
    CHECK(host_rounds.at(kUpdates - 1).val_loss == val.back());
    CHECK(val.back() < val.front() - 0.05);
}
