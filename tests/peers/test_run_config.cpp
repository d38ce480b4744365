// tests/peers/test_run_config.cpp: run.toml is read strictly: every unknown key or section, wrong
// type and value out of range is refused with "FILE:LINE: ..." and the closest known key; the
// bundled default and a full file parse to the values they say.
#include <catch2/catch.hpp>

#include "core/error.h"
#include "peers/moment_sync.h"
#include "peers/run_config.h"
#include "privacy/rdp_accountant.h"

using arch::parse_run_config;
using Catch::Contains;

namespace {

std::string refused(const std::string& toml) {
    try {
        parse_run_config(toml, "run.toml");
    } catch (const arch::Error& e) {
        return e.what();
    }
    FAIL("accepted: " << toml);
    return "";
}

}  // namespace

TEST_CASE("a misspelled key names the file, the line, the section and the key meant") {
    CHECK(refused("[run]\nrounds = 4\n\n[inner]\nstep_per_round = 5\n") ==
          "run.toml:5: unknown key 'step_per_round' in [inner] (did you mean 'steps_per_round'?)");
    CHECK(refused("[outer]\nmomentun = 0.9\n") == "run.toml:2: unknown key 'momentun' in [outer] (did you mean 'momentum'?)");
    // Nothing close: no suggestion.
    CHECK(refused("[inner]\nzebra = 1\n") == "run.toml:2: unknown key 'zebra' in [inner]");
}

TEST_CASE("unknown sections and top-level keys are refused with the line") {
    CHECK(refused("[run]\nrounds = 2\n[innr]\nbatch = 4\n") == "run.toml:3: unknown section [innr] (did you mean [inner]?)");
    CHECK(refused("rounds = 2\n") == "run.toml:1: unknown key 'rounds'");
    CHECK(refused("run = 3\n") == "run.toml:1: 'run' must be a section ([run]), found an integer");
}

TEST_CASE("wrong types and values out of range name the key and what was found") {
    CHECK(refused("[run]\nrounds = \"ten\"\n") == "run.toml:2: run.rounds must be an integer, found a string");
    CHECK(refused("[run]\n\nrounds = 0\n") == "run.toml:3: run.rounds must be in [1, 10000000], found 0");
    CHECK(refused("[inner]\nlr = -1.0\n") == "run.toml:2: inner.lr must be in (0, 10], found -1");
    CHECK(refused("[inner]\nlr = true\n") == "run.toml:2: inner.lr must be a number, found a boolean");
    CHECK(refused("[run]\nmode = \"asynk\"\n") ==
          "run.toml:2: run.mode must be one of sync, async, streaming, overlap, found 'asynk' (did you mean 'async'?)");
    CHECK(refused("[outer]\nmomentum = 1.0\n") == "run.toml:2: outer.momentum must be in [0, 0.999999], found 1");
    CHECK(refused("[deadlines]\nround_timeout_s = 0\n") ==
          "run.toml:2: deadlines.round_timeout_s must be in (0, 1e+07], found 0");
    CHECK_THAT(refused("[wire]\ncodec = \"int9\"\n"), Contains("run.toml:2: wire.codec:"));
    CHECK(refused("[outer]\nscreen_factor = 1\n") == "run.toml:2: outer.screen_factor must be in (1, 1e+09], found 1");
    CHECK(refused("[outer]\nscreen = \"clop\"\n") ==
          "run.toml:2: outer.screen must be one of clip, reject, off, found 'clop' (did you mean 'clip'?)");
    CHECK_THAT(refused("[run\n"), Contains("run.toml:1: not valid TOML"));
}

TEST_CASE("every key is read into the config, integers where numbers are asked") {
    const arch::RunConfig c = parse_run_config(R"([run]
name = "x"
rounds = 3
islands = 2
mode = "async"
seed = 7
[model]
config = "tiny"
layers = 2
[data]
train = "/d/train_*.bin"
val = "/d/val_*.bin"
[inner]
steps_per_round = 5
batch = 2
seq_len = 16
grad_accum = 2
lr = 1e-3
weight_decay = 0
grad_clip = 0.5
warmup = 1
val_batches = 2
optimizer = "muon"
[outer]
lr = 1
momentum = 0.5
aggregator = "median"
screen = "reject"
screen_factor = 3
[async]
max_staleness = 2
stale = "refuse"
[wire]
codec = "fp32"
down_codec = "fp32"
[deadlines]
join_timeout_s = 5
round_timeout_s = 2.5
heartbeat_timeout_s = 1
straggler = "fold"
)",
                                               "run.toml");
    CHECK(c.name == "x");
    CHECK(c.rounds == 3);
    CHECK(c.islands == 2);
    CHECK(c.mode == arch::RunMode::async);
    CHECK(c.outer.optimizer == arch::diloco::OuterOptimizerKind::delayed_nesterov);
    CHECK(c.seed == 7);
    CHECK(c.layers == 2);
    CHECK(c.train_data == "/d/train_*.bin");
    CHECK(c.steps_per_round == 5);
    CHECK(c.grad_accum == 2);
    CHECK(c.lr == Approx(1e-3));
    CHECK(c.weight_decay == 0.0f);
    CHECK(c.outer.lr == 1.0f);
    CHECK(c.outer.aggregator == "median");
    CHECK(c.outer.screen == arch::outer::ScreenPolicy::Action::reject);
    CHECK(c.outer.screen_factor == 3.0);
    CHECK(c.round_timeout_s == 2.5);
    CHECK(c.join_timeout_s == 5.0);
    CHECK(c.fold_stragglers);
    CHECK(c.max_staleness == 2);
    CHECK(c.stale == arch::rounds::StaleAction::refuse);
    CHECK(c.optimizer == arch::InnerOptimizer::muon);
    CHECK(arch::run_train_config(c, "t", "v", 1).optimizer == arch::InnerOptimizer::muon);
}

TEST_CASE("warm starts and the inner optimizer: defaults and refusals") {
    const arch::RunConfig d = parse_run_config("", "run.toml");
    CHECK(d.optimizer == arch::InnerOptimizer::adamw);
    CHECK(d.init.empty());
    CHECK(d.init_hf.empty());
    CHECK(parse_run_config("[model]\ninit_hf = \"/m/smol\"\n", "run.toml").init_hf == "/m/smol");
    CHECK(refused("[inner]\noptimizer = \"sgd\"\n") == "run.toml:2: inner.optimizer must be one of adamw, muon, found 'sgd'");
    CHECK_THROWS_WITH(parse_run_config("[model]\ninit = \"a.bin\"\ninit_hf = \"b\"\n", "run.toml"),
                      Catch::Contains("init and init_hf are two warm starts"));
}

TEST_CASE("async staleness keys: defaults, ranges and choices") {
    const arch::RunConfig d = parse_run_config("", "run.toml");
    CHECK(d.max_staleness == 4);
    CHECK(d.stale == arch::rounds::StaleAction::downweight);
    CHECK(refused("[async]\nmax_staleness = -1\n") == "run.toml:2: async.max_staleness must be in [0, 1000000], found -1");
    CHECK(refused("[async]\nstale = \"drop\"\n") ==
          "run.toml:2: async.stale must be one of downweight, refuse, found 'drop'");
    CHECK(refused("[async]\nmax_stale = 3\n") ==
          "run.toml:2: unknown key 'max_stale' in [async] (did you mean 'max_staleness'?)");
    // Async's optimizer is Delayed Nesterov: its default there; another one written is refused, not replaced.
    CHECK(parse_run_config("[run]\nmode = \"async\"\n[outer]\noptimizer = \"delayed-nesterov\"\n", "run.toml").outer.optimizer ==
          arch::diloco::OuterOptimizerKind::delayed_nesterov);
    CHECK_THAT(refused("[run]\nmode = \"async\"\n[outer]\noptimizer = \"nesterov\"\n"),
               Contains("run.toml:4: outer.optimizer = \"nesterov\" is not for async mode"));
}

TEST_CASE("streaming keys: defaults, and what streaming mode cannot take") {
    const arch::RunConfig d = parse_run_config("", "run.toml");
    CHECK(d.fragments == 4);
    CHECK(d.tau == 1);
    CHECK(d.alpha == 0.5f);
    CHECK(d.merge == arch::diloco::StreamingMerge::carry);
    CHECK(d.outer.momentum == 0.5f);  // the bench's winner at H = 50 (docs/run-config.md)
    CHECK(arch::run_updates(d) == 10);  // sync: one update a round
    const arch::RunConfig s = parse_run_config("[run]\nrounds = 3\nmode = \"streaming\"\n[wire]\ncodec = \"fp4+zstd:1\"\n"
                                               "[streaming]\nfragments = 2\n", "run.toml");
    CHECK(arch::run_updates(s) == 6);  // one update per fragment per round
    CHECK(arch::round_fragment(s, 5) == 1);
    CHECK(s.outer.total_updates == 3);  // each fragment's own schedule ends at the last round
    // τ must end before the next fragment's send: H / P = 50 / 4 = 12 steps apart.
    CHECK(refused("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4\"\n[streaming]\ntau = 12\n") ==
          "run.toml:6: streaming.tau = 12 must be below inner.steps_per_round / streaming.fragments = 50 / 4 (the steps "
          "between two fragments' syncs)");
    CHECK_THAT(refused("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4+ef+zstd:1\"\n"),
               Contains("run.toml:4: wire.codec 'fp4+ef+zstd:1' has error feedback"));
    CHECK_THAT(refused("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4\"\n[deadlines]\nstraggler = \"fold\"\n"),
               Contains("run.toml:6: deadlines.straggler = \"fold\""));
    CHECK(refused("[streaming]\nalpha = 1.5\n") == "run.toml:2: streaming.alpha must be in [0, 1], found 1.5");
    CHECK(parse_run_config("[streaming]\nmerge = \"mix\"\n", "run.toml").merge == arch::diloco::StreamingMerge::mix);
    CHECK_THAT(refused("[streaming]\nmerge = \"cary\"\n"), Contains("streaming.merge") && Contains("cary"));
    // More fragments than the model has blocks: refused when the model is known.
    const arch::RunConfig many = parse_run_config("[run]\nmode = \"streaming\"\n[model]\nlayers = 2\n[wire]\ncodec = \"fp4\"\n"
                                                  "[streaming]\nfragments = 3\ntau = 1\n", "run.toml");
    CHECK_THROWS_WITH(arch::run_fragments(many, arch::run_model_config(many, 256)), Contains("exceeds the model's 2 blocks"));
}

TEST_CASE("overlap mode: one fragment, error feedback and fold taken, DES-LOC refused, its proxy scale read") {
    const arch::RunConfig o = parse_run_config("[run]\nrounds = 3\nmode = \"overlap\"\n[wire]\ncodec = \"fp4+ef+zstd:1\"\n"
                                               "[deadlines]\nstraggler = \"fold\"\n", "run.toml");
    CHECK(o.mode == arch::RunMode::overlap);
    CHECK(arch::run_updates(o) == 3);  // a round is one update of the whole θ, as in sync mode
    CHECK(arch::run_fragment_count(o) == 1);
    CHECK(o.sync_moments_every == 0);  // off unless set
    CHECK(o.fold_stragglers);
    CHECK_THAT(refused("[run]\nmode = \"overlap\"\n[outer]\nsync_moments_every = 2\n"),
               Contains("outer.sync_moments_every = 2 is for sync mode; overlap mode"));
    // overlap.proxy_scale: 0.85 by default, read in [0, 1], and only in overlap mode.
    CHECK(o.overlap_proxy_scale == 0.85f);
    CHECK(parse_run_config("[run]\nmode = \"overlap\"\n[overlap]\nproxy_scale = 1\n", "run.toml").overlap_proxy_scale == 1.0f);
    CHECK_THAT(refused("[run]\nmode = \"overlap\"\n[overlap]\nproxy_scale = 1.5\n"), Contains("overlap.proxy_scale"));
    CHECK_THAT(refused("[overlap]\nproxy_scale = 0.9\n"),
               Contains("run.toml:2: overlap.proxy_scale is for overlap mode (run.mode = \"overlap\"); sync mode"));
    CHECK_THAT(refused("[run]\nmode = \"overlap\"\n[overlap]\nproxy_scael = 0.9\n"), Contains("proxy_scale"));
}

TEST_CASE("inner.steps_per_round = \"auto\": its bounds and target read, the schedule laid out in the most H, refusals") {
    const arch::RunConfig a = parse_run_config("[run]\nmode = \"overlap\"\n[inner]\nsteps_per_round = \"auto\"\n"
                                               "auto_target = 0.9\nauto_min_steps = 5\nauto_max_steps = 400\n", "run.toml");
    CHECK(a.auto_steps);
    CHECK(a.auto_h.target == Approx(0.9));
    CHECK(a.auto_h.min_steps == 5);
    CHECK(a.auto_h.max_steps == 400);
    CHECK(a.steps_per_round == 400);  // the schedule's unit, and the most a round's Δ can have moved
    const arch::RunConfig d = parse_run_config("[inner]\nsteps_per_round = \"auto\"\n", "run.toml");
    CHECK(d.auto_h.target == Approx(0.95));
    CHECK(d.auto_h.min_steps == 10);
    CHECK(d.steps_per_round == 1000);
    CHECK_FALSE(parse_run_config("", "run.toml").auto_steps);
    CHECK_THAT(refused("[inner]\nsteps_per_round = \"automatic\"\n"), Contains("inner.steps_per_round") && Contains("auto"));
    CHECK(refused("[inner]\nsteps_per_round = 50\nauto_target = 0.9\n") ==
          "run.toml:3: inner.auto_target is for inner.steps_per_round = \"auto\" (H from the link)");
    CHECK(refused("[inner]\nsteps_per_round = \"auto\"\nauto_min_steps = 50\nauto_max_steps = 40\n") ==
          "run.toml:4: inner.auto_max_steps = 40 is below inner.auto_min_steps = 50");
    CHECK_THAT(refused("[inner]\nsteps_per_round = \"auto\"\nauto_target = 1.0\n"), Contains("inner.auto_target"));
    CHECK_THAT(refused("[run]\nmode = \"streaming\"\n[inner]\nsteps_per_round = \"auto\"\n[wire]\ncodec = \"fp4\"\n"),
               Contains("streaming syncs its fragments at fixed steps"));
}

TEST_CASE("the bundled default run config parses") {
    const arch::RunConfig c = arch::load_run_config("data/demo-run.toml");
    CHECK(c.name == "kjv-demo");
    CHECK(c.islands == 3);
    CHECK(c.sync_moments_every == 4);
}

TEST_CASE("DES-LOC's outer.sync_moments_every: default, range, and the modes that do not take it") {
    const arch::RunConfig d = parse_run_config("", "run.toml");
    CHECK(d.sync_moments_every == 4);
    CHECK(parse_run_config("[outer]\nsync_moments_every = 0\n", "run.toml").sync_moments_every == 0);
    CHECK(parse_run_config("[outer]\nsync_moments_every = 1\n", "run.toml").sync_moments_every == 1);
    CHECK(refused("[outer]\nsync_moments_every = -1\n") ==
          "run.toml:2: outer.sync_moments_every must be in [0, 1000000], found -1");
    CHECK_THAT(refused("[outer]\nsync_moments_every = 2.5\n"),
               Contains("run.toml:2: outer.sync_moments_every must be an integer"));
    // Async and streaming have no round the moments belong to: off there unless set, refused if set.
    CHECK(parse_run_config("[run]\nmode = \"async\"\n", "run.toml").sync_moments_every == 0);
    CHECK(parse_run_config("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4\"\n", "run.toml").sync_moments_every == 0);
    CHECK(parse_run_config("[run]\nmode = \"async\"\n[outer]\nsync_moments_every = 0\n", "run.toml").sync_moments_every == 0);
    CHECK(refused("[run]\nmode = \"async\"\n[outer]\nsync_moments_every = 4\n") ==
          "run.toml:4: outer.sync_moments_every = 4 is for sync mode; async mode does not sync AdamW moments (set it "
          "to 0, or leave it out)");
    CHECK_THAT(refused("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4\"\n[outer]\nsync_moments_every = 2\n"),
               Contains("run.toml:6: outer.sync_moments_every = 2 is for sync mode; streaming mode"));
    // The rounds that carry them: K − 1, 2K − 1, ... (bench_convergence's --desloc K).
    CHECK_FALSE(arch::moments_round(d, 0));
    CHECK_FALSE(arch::moments_round(d, 2));
    CHECK(arch::moments_round(d, 3));
    CHECK_FALSE(arch::moments_round(d, 4));
    CHECK(arch::moments_round(d, 7));
    CHECK(arch::moments_round(1, 0));
    CHECK_FALSE(arch::moments_round(0, 3));
}

TEST_CASE("Llama-family model keys: read for a Llama preset, refused for GPT-2's, an unknown preset named") {
    const arch::RunConfig c = parse_run_config(
        "[model]\nconfig = \"llama-tiny\"\nlayers = 2\nkv_heads = 1\nffn_hidden = 200\nrope_theta = 500000.0\n"
        "tied_embeddings = false\n",
        "run.toml");
    const arch::ModelConfig m = arch::run_model_config(c, 1000);
    CHECK(m.family == arch::ModelFamily::llama);
    CHECK(m.num_layers == 2);
    CHECK(m.num_kv_heads == 1);
    CHECK(m.ffn_hidden == 200);
    CHECK(m.rope_theta == 500000.0f);
    CHECK_FALSE(m.tied_embeddings);
    CHECK(m.vocab_size == 1000);
    // The preset's own values where the file is silent.
    const arch::ModelConfig d = arch::run_model_config(parse_run_config("[model]\nconfig = \"llama-tiny\"\n", "run.toml"), 1000);
    CHECK(d.num_kv_heads == 2);
    CHECK(d.tied_embeddings);
    CHECK(refused("[model]\nconfig = \"tiny\"\nkv_heads = 2\n") ==
          "run.toml:3: model.kv_heads is not a setting of the gpt2 family (model.config 'tiny')");
    CHECK_THAT(refused("[model]\nconfig = \"llama-tiny\"\nkv_heads = 0\n"), Contains("model.kv_heads"));
    CHECK_THAT(refused("[model]\nconfig = \"lama-tiny\"\n"), Contains("model.config") && Contains("unknown model config 'lama-tiny'"));
    // KV heads that do not divide the heads: refused when the model is built from the run.
    const arch::RunConfig odd = parse_run_config("[model]\nconfig = \"llama-tiny\"\nkv_heads = 3\n", "run.toml");
    CHECK_THROWS_WITH(arch::run_model_config(odd, 1000), Contains("KV heads 3 do not divide heads NH=4"));
}

TEST_CASE("[privacy]: off by default; its keys read, σ derived from the budget, and what does not compose refused") {
    CHECK_FALSE(parse_run_config("", "run.toml").privacy.on());
    const std::string central = "[run]\nrounds = 40\n[privacy]\nmode = \"central\"\nclip = 0.5\nepsilon = 8\n";
    const arch::RunConfig c = parse_run_config(central, "run.toml");
    CHECK(c.privacy.mode == "central");
    CHECK(c.privacy.clip == 0.5);
    CHECK(c.privacy.epsilon == 8);
    CHECK(c.privacy.delta == 1e-5);
    CHECK(c.privacy.noise_multiplier == 0);  // derived: what archipelago privacy --epsilon 8 prints
    CHECK(arch::privacy::PrivacyBudget(c.privacy, 40).noise_multiplier() ==
          Approx(arch::privacy::noise_for_epsilon(1, 40, 8, 1e-5)));
    // The clip is the screen and DES-LOC's moments would travel un-noised: both off when unset.
    CHECK(c.outer.screen == arch::outer::ScreenPolicy::Action::off);
    CHECK(c.sync_moments_every == 0);
    const arch::RunConfig d = parse_run_config(
        "[run]\nislands = 4\n[privacy]\nmode = \"distributed\"\nclip = 1\nepsilon = 2\ndelta = 1e-6\nnoise_multiplier = 3\nhonest = 3\n",
        "run.toml");
    CHECK(d.privacy.honest == 3);
    CHECK(d.privacy.noise_multiplier == 3);
    CHECK(d.privacy.delta == 1e-6);

    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nepsilon = 8\n"), Contains("privacy.clip"));
    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nclip = 1\n"), Contains("privacy.epsilon"));
    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nclip = 0\nepsilon = 8\n"), Contains("privacy.clip must be in"));
    CHECK_THAT(refused("[privacy]\nmode = \"distributed\"\nclip = 1\nepsilon = 8\n"), Contains("privacy.honest"));
    CHECK_THAT(refused("[run]\nislands = 3\n[privacy]\nmode = \"distributed\"\nclip = 1\nepsilon = 8\nhonest = 4\n"),
               Contains("privacy.honest must be in [1, 3]"));
    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nclip = 1\nepsilon = 8\nhonest = 2\n"),
               Contains("privacy.honest is for privacy.mode = \"distributed\""));
    CHECK_THAT(refused("[privacy]\nclip = 1\n"), Contains("run.toml:2: privacy.clip is set, but privacy.mode is \"off\""));
    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nclip = 1\nepsilon = 8\nnoise_multipler = 2\n"),
               Contains("noise_multiplier"));
    CHECK_THAT(refused("[privacy]\nmode = \"local\"\n"), Contains("privacy.mode"));
    // A noise multiplier the budget cannot afford one update of.
    CHECK_THAT(refused("[privacy]\nmode = \"central\"\nclip = 1\nepsilon = 0.1\nnoise_multiplier = 0.5\n"),
               Contains("one update at noise multiplier 0.5"));
    // What does not compose, by name.
    CHECK_THAT(refused(central + "[outer]\naggregator = \"median\"\n"), Contains("outer.aggregator 'median' is not a mean"));
    CHECK_THAT(refused(central + "[outer]\nscreen = \"clip\"\n"), Contains("privacy.clip bounds every Δ exactly"));
    CHECK(parse_run_config(central + "[outer]\nscreen = \"off\"\n", "run.toml").privacy.on());
    CHECK_THAT(refused(central + "[outer]\nsync_moments_every = 4\n"), Contains("DES-LOC's AdamW moments would reach"));
    CHECK_THAT(refused(central + "[deadlines]\nstraggler = \"fold\"\n"), Contains("twice the sensitivity"));
    CHECK_THAT(refused("[run]\nmode = \"async\"\n[privacy]\nmode = \"distributed\"\nclip = 1\nepsilon = 8\nhonest = 2\n"),
               Contains("an async update holds one island's Δ"));
    // Central privacy in async and streaming mode, and with a codec with error feedback, are taken.
    CHECK(parse_run_config("[run]\nmode = \"async\"\n[privacy]\nmode = \"central\"\nclip = 1\nepsilon = 8\n", "run.toml").privacy.on());
    CHECK(parse_run_config("[run]\nmode = \"streaming\"\n[wire]\ncodec = \"fp4\"\n[privacy]\nmode = \"distributed\"\nclip = 1\n"
                           "epsilon = 8\nhonest = 2\n", "run.toml").privacy.on());
    CHECK(parse_run_config(central + "[wire]\ncodec = \"int8:block=256+ef\"\n", "run.toml").privacy.on());
}

TEST_CASE("run.nat: auto by default, each protocol or off by name, anything else refused") {
    CHECK(parse_run_config("[run]\nrounds = 3\n", "run.toml").nat == arch::net::NatMode::automatic);
    CHECK(parse_run_config("[run]\nnat = \"natpmp\"\n", "run.toml").nat == arch::net::NatMode::natpmp);
    CHECK(parse_run_config("[run]\nnat = \"off\"\n", "run.toml").nat == arch::net::NatMode::off);
    CHECK_THAT(refused("[run]\nnat = \"upnpp\"\n"), Contains("run.toml:2") && Contains("upnpp") && Contains("upnp"));
}
