// tests/peers/test_streaming_run.cpp: Streaming DiLoCo (run.mode = "streaming") as real processes:
// a host and three peers over CURVE on loopback. Every island ends every round bit-identical to the
// host, fragment by fragment; each sends only its round's fragment (P-fold fewer bytes per sync);
// each merges the update only after its τ overlapped steps; and the val loss falls.
#include <catch2/catch.hpp>

#include <regex>

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
std::map<int, std::string> host_fragment_hashes(const std::string& log) {
    std::map<int, std::string> out;
    const std::regex line(R"(round (\d+) updated fragment (\d+) \(3 islands\), fragment θ ([0-9a-f]{16}))");
    for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
        const int round = std::stoi((*it)[1]);
        CHECK(std::stoi((*it)[2]) == round % kFragments);
        out[round] = (*it)[3];
    }
    return out;
}

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
    CHECK(host->log().find("run finished after " + std::to_string(kUpdates) + " rounds") != std::string::npos);

    const std::map<int, std::string> host_hashes = host_fragment_hashes(host->log());
    REQUIRE(host_hashes.size() == kUpdates);

    // What one fragment's fp4 Δ takes on the wire, from the model the host and peers build.
    const RunConfig c = parse_run_config(toml, "test");
    const PreparedCorpus corpus = ensure_bundled_corpus();
    const ModelConfig model = run_model_config(c, Tokenizer::load(corpus.tokenizer_path).vocab_size());
    const std::vector<diloco::Fragment> fragments = run_fragments(c, model);
    REQUIRE(fragments.size() == kFragments);
    const auto codec = compression::make_codec("fp4");
    const std::size_t whole = codec->encode(std::vector<float>(ParamLayout(model).num_params(), 1.0f)).size();

    for (auto& p : peers) {
        const std::string log = p->log();
        for (int r = 0; r < kUpdates; ++r) {
            INFO("round " << r);
            const int f = r % kFragments;
            // Bit-identical, fragment by fragment: the fragment's hash after the update is the host's.
            CHECK(log.find("round " + std::to_string(r) + " applied to fragment " + std::to_string(f) + " (3 islands") !=
                  std::string::npos);
            CHECK(log.find("fragment θ " + host_hashes.at(r) + ", θ ") != std::string::npos);
            // Only the round's fragment travels: its fp4 size, about 1/P of the whole θ's.
            const std::size_t bytes = codec->encode(std::vector<float>(fragments[f].size, 1.0f)).size();
            CHECK(log.find("round " + std::to_string(r) + " sent pseudo-gradient: " + std::to_string(bytes) +
                           " bytes (fragment " + std::to_string(f)) != std::string::npos);
            CHECK(bytes < whole * 0.6);
        }
        CHECK(count(log, "matches the host") == kUpdates);
        // Each update but the last waits for the island's τ = 1 step after its send; the last has none.
        CHECK(count(log, "after 1 overlapped steps") == kUpdates - 1);
        CHECK(count(log, "after 0 overlapped steps") == 1);
        // A round after the first trains H / P − τ steps before its send: the τ step was the round's start.
        CHECK(log.find("(fragment 1, after 2 steps") != std::string::npos);
    }
    // And the run learns: the host's val loss after the last update is below the first's.
    const std::regex val(R"(round (\d+) applied to fragment \d \(3 islands, val loss ([0-9.]+)\))");
    const std::string log = peers[0]->log();
    std::map<int, double> losses;
    for (auto it = std::sregex_iterator(log.begin(), log.end(), val); it != std::sregex_iterator(); ++it)
        losses[std::stoi((*it)[1])] = std::stod((*it)[2]);
    REQUIRE(losses.size() == kUpdates);
    CHECK(losses.at(kUpdates - 1) < losses.at(0) - 0.05);
}
