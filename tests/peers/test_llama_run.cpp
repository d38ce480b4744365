// tests/peers/test_llama_run.cpp: a DiLoCo run of the Llama family as a user runs it: `archipelago
// host` and two `archipelago peer` processes on 127.0.0.1 over CURVE, training a llama-tiny-shaped
// model (GQA, untied, rope_theta 500000) warm-started from a Hugging Face folder (model.init_hf, the
// host's import). Every island ends every round bit-identical to the host, and the val loss falls.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/corpus.h"
#include "core/hf_export.h"
#include "core/llama.h"
#include "core/tokenizer.h"
#include "peers/diloco/global_model.h"
#include "peers/run_config.h"
#include "tests/peers/run_fixture.h"

using namespace arch;
using namespace arch::test;

TEST_CASE("a Llama run warm-started from a Hugging Face folder: islands bit-identical to the host every round, val loss falls") {
    const int rounds = 4;
    Run run(rounds, 2);
    std::string text = read_text_file(run.config);
    const std::string gpt2_model = "config = \"tiny\"\nlayers = 1\nchannels = 128\nheads = 2\nmax_seq_len = 32\n";
    REQUIRE(text.find(gpt2_model) != std::string::npos);
    text.replace(text.find(gpt2_model), gpt2_model.size(),
                 "config = \"llama-tiny\"\nlayers = 2\nchannels = 64\nheads = 4\nkv_heads = 2\nffn_hidden = 160\n"
                 "max_seq_len = 32\nrope_theta = 500000.0\ntied_embeddings = false\n");
    text.replace(text.find("steps_per_round = 3"), 19, "steps_per_round = 6");
    text.replace(text.find("lr = 1e-3"), 9, "lr = 3e-3");
    write_file(run.config, text);
    run.make_peer(1);
    run.make_peer(2);

    // The warm start: weights the run's seed cannot make, exported as LlamaForCausalLM.
    const RunConfig c = load_run_config(run.config);
    const ModelConfig model = run_model_config(c, Tokenizer::load(ensure_bundled_corpus().tokenizer_path).vocab_size());
    REQUIRE(model.family == ModelFamily::llama);
    REQUIRE_FALSE(model.tied_embeddings);
    std::vector<float> theta = llama_init_params(model, 99);
    const std::string folder = run.dir.file("hf-llama");
    export_hf(folder, model, theta);
    std::string config_json = read_text_file(folder + "/config.json");
    CHECK(config_json.find("LlamaForCausalLM") != std::string::npos);
    std::string set = read_text_file(run.config);
    set.insert(set.find("[model]\n") + 8, "init_hf = \"" + folder + "\"\n");
    write_file(run.config, set);
    const std::string expected = diloco::hash_floats(theta).substr(0, 12);

    auto host = run.host();
    auto p1 = run.peer(1);
    auto p2 = run.peer(2, kEnv, {"--devices", "2", "--parallel", "zero3"});  // an island of two ZeRO-3 devices
    if (host->wait(600) != 0) FAIL(host->log() + "\n--- peer 1\n" + p1->log() + "\n--- peer 2\n" + p2->log());
    CHECK(p1->wait(30) == 0);
    CHECK(p2->wait(30) == 0);
    const RunEvent warm = first_event(host->events(), {.kind = "warm_start", .round = 0});
    CHECK(warm.detail == folder);
    CHECK(warm.theta == expected);
    CHECK(host->count({.kind = "finished", .round = rounds}) == 1);
    for (auto* p : {p1.get(), p2.get()}) {
        CHECK(first_event(p->events(), {.kind = "synced", .round = 0}).theta == expected);
        CHECK(p->log().find("llama L2 C64 NH4 KV2 F160") != std::string::npos);  // the model it tells its user it trains
        CHECK(p->count({.kind = "round_applied"}) == rounds);
        CHECK(p->count({.kind = "theta_differs"}) == 0);
    }
    const std::vector<double> val = measured_val_losses(*host);
    REQUIRE(val.size() >= 2);  // the starting θ's and the last
    WARN("val loss of the starting θ " << val.front() << ", after round " << rounds - 1 << " " << val.back());
    CHECK(val.back() < val.front() - 0.05);
}
