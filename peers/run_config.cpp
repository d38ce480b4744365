// peers/run_config.cpp: run.toml parsing (toml++, through core/toml_file.h) and validation: every key
// is typed and ranged where it is read, and any key or section not read here is refused.
#include "peers/run_config.h"

#include <algorithm>
#include <cstdint>

#include "compression/codec.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/model_family.h"
#include "core/param_layout.h"
#include "core/toml_file.h"

namespace arch {

namespace {
// What island-level DP's guarantee holds with (docs/privacy.md, "What composes"); the rest is refused
// by name. Every update must be a mean of clipped Δs, one per island, plus the whole noise.
void check_privacy_composes(RunConfig& c, const toml_file::Fields& privacy, const toml_file::Fields& outer,
                            const toml_file::Fields& deadlines, bool screen_set, bool moments_set) {
    auto refuse = [&](const std::string& where, const std::string& why) {
        throw Error(where + ": " + why + " (privacy.mode = \"" + c.privacy.mode + "\"; docs/privacy.md)");
    };
    if (c.outer.aggregator != "mean")
        refuse(outer.where("aggregator"), "outer.aggregator '" + c.outer.aggregator +
                                              "' is not a mean of clipped pseudo-gradients, whose noise the accountant counts; "
                                              "use mean (the privacy clip already bounds what any island can move)");
    if (screen_set && c.outer.screen != outer::ScreenPolicy::Action::off)
        refuse(outer.where("screen"), "outer.screen measures each Δ against the round's median, which makes one island's "
                                      "fate depend on the others' data; privacy.clip bounds every Δ exactly instead "
                                      "(leave outer.screen out)");
    c.outer.screen = outer::ScreenPolicy::Action::off;
    if (moments_set && c.sync_moments_every > 0)
        refuse(outer.where("sync_moments_every"), "DES-LOC's AdamW moments would reach every island un-noised; set "
                                                  "outer.sync_moments_every = 0, or leave it out");
    c.sync_moments_every = 0;
    if (c.fold_stragglers)
        refuse(deadlines.where("straggler"), "deadlines.straggler = \"fold\" can put two of an island's Δs in one "
                                             "update, twice the sensitivity the noise is for; use drop");
    if (c.privacy.distributed() && c.mode == RunMode::async)
        refuse(privacy.where("mode"), "an async update holds one island's Δ, so it carries one share of the noise, not "
                                      "the whole; use central, or sync or streaming mode");
    try {
        privacy::PrivacyBudget budget(c.privacy, run_updates(c));
    } catch (const Error& e) {
        refuse(privacy.where("epsilon"), e.what());
    }
}

// wire.codec parsed at start (a typo fails here, not at round 1), its error placed in the file.
compression::CodecSpec parse_wire_codec(const std::string& spec, const toml_file::Fields& wire) {
    try {
        return compression::parse_codec_spec(spec);
    } catch (const Error& e) {
        throw Error(wire.where("codec") + ": wire.codec: " + e.what());
    }
}

// One reader a section: each reads its keys into c and refuses any it does not know (finish).
void read_run(toml_file::Fields& run, RunConfig& c) {
    run.text("name", c.name);
    run.integer("rounds", c.rounds, 1, 10'000'000);
    run.integer("islands", c.islands, 1, 1024);
    run.choice("mode", c.mode, run_mode_names());
    run.text("bind", c.bind);
    run.choice("nat", c.nat, net::nat_mode_names());
    run.text("checkpoint_dir", c.checkpoint_dir);
    run.integer("checkpoint_every", c.checkpoint_every, 1, 10'000'000);
    run.number("checkpoint_minutes", c.checkpoint_minutes, 0.0, 1e6);
    int64_t seed = static_cast<int64_t>(c.seed);
    run.integer("seed", seed, 0, INT64_MAX);
    c.seed = static_cast<uint64_t>(seed);
    run.finish();
}

void read_model(toml_file::Fields& model, RunConfig& c) {
    model.text("config", c.preset);
    model.integer("layers", c.layers, 0, 1024);
    model.integer("channels", c.channels, 0, 65536);
    model.integer("heads", c.heads, 0, 1024);
    model.integer("max_seq_len", c.max_seq_len, 0, 1 << 20);
    model.integer("vocab", c.vocab, 0, 1 << 24);
    ModelFamily family = ModelFamily::gpt2;
    try {
        family = model_preset(c.preset).family;
    } catch (const Error& e) {
        model.fail("config", e.what());
    }
    // The keys only some families take: refused for a preset of another family.
    const std::vector<std::string>& own = family_spec(family).settings;
    for (const char* key : {"kv_heads", "ffn_hidden", "rope_theta", "tied_embeddings"})
        if (model.has(key) && std::find(own.begin(), own.end(), key) == own.end())
            model.fail(key, std::string("is not a setting of the ") + family_name(family) + " family (model.config '" +
                                c.preset + "')");
    model.integer("kv_heads", c.kv_heads, 1, 1024);
    model.integer("ffn_hidden", c.ffn_hidden, 1, 1 << 20);
    model.number("rope_theta", c.rope_theta, 0.0, 1e12, true);
    if (model.has("tied_embeddings")) {
        bool tied = false;
        model.boolean("tied_embeddings", tied);
        c.tied = tied ? 1 : 0;
    }
    model.text("init", c.init);
    model.text("init_hf", c.init_hf);
    if (!c.init.empty() && !c.init_hf.empty())
        throw Error(model.where("init_hf") + ": [model] init and init_hf are two warm starts; give one");
    model.finish();
}

void read_data(toml_file::Fields& data, RunConfig& c) {
    data.text("train", c.train_data);
    data.text("val", c.val_data);
    data.choice("assign", c.assign, data_assign_names());
    data.boolean("serve", c.serve);
    data.finish();
}

void read_inner(toml_file::Fields& inner, RunConfig& c) {
    if (inner.has_text("steps_per_round")) {
        std::string v;
        inner.text_choice("steps_per_round", v, {"auto"});
        if (c.mode == RunMode::streaming)
            inner.fail("steps_per_round", "= \"auto\" is for sync, overlap and async mode; streaming syncs its fragments at "
                                          "fixed steps (give a number)");
        c.auto_steps = true;
        inner.number("auto_target", c.auto_h.target, 0.05, 0.999);
        int lo = static_cast<int>(c.auto_h.min_steps), hi = static_cast<int>(c.auto_h.max_steps);
        inner.integer("auto_min_steps", lo, 1, 10'000'000);
        inner.integer("auto_max_steps", hi, 1, 10'000'000);
        if (hi < lo)
            inner.fail("auto_max_steps", "= " + std::to_string(hi) + " is below inner.auto_min_steps = " + std::to_string(lo));
        c.auto_h.min_steps = static_cast<uint32_t>(lo);
        c.auto_h.max_steps = static_cast<uint32_t>(hi);
        c.steps_per_round = hi;  // the schedule is laid out in rounds of the most H; a round's H steps spread over its share
    } else {
        inner.integer("steps_per_round", c.steps_per_round, 1, 10'000'000);
        for (const char* key : {"auto_target", "auto_min_steps", "auto_max_steps"})
            if (inner.has(key)) inner.fail(key, "is for inner.steps_per_round = \"auto\" (H from the link)");
    }
    inner.integer("batch", c.batch, 1, 1 << 16);
    inner.integer("seq_len", c.seq_len, 1, 1 << 20);
    inner.integer("grad_accum", c.grad_accum, 1, 1 << 16);
    inner.number("lr", c.lr, 0.0, 10.0, true);
    inner.number("weight_decay", c.weight_decay, 0.0, 10.0);
    inner.number("grad_clip", c.grad_clip, 0.0, 1e9);
    inner.integer("warmup", c.warmup, 0, 1'000'000'000);
    inner.choice("optimizer", c.optimizer, inner_optimizer_names());
    inner.integer("val_batches", c.val_batches, 1, 1'000'000);
    inner.finish();
}

void read_outer(toml_file::Fields& outer, RunConfig& c) {
    outer.choice("optimizer", c.outer.optimizer, diloco::outer_optimizer_names());
    outer.number("lr", c.outer.lr, 0.0, 100.0, true);
    outer.number("momentum", c.outer.momentum, 0.0, 0.999999);
    // The outer lr schedule: warmup over lr_warmup updates, cosine to final_lr at the last round.
    outer.number("final_lr", c.outer.final_lr, 0.0, 100.0);
    int lr_warmup = static_cast<int>(c.outer.lr_warmup);
    outer.integer("lr_warmup", lr_warmup, 0, 10'000'000);
    c.outer.lr_warmup = static_cast<uint32_t>(lr_warmup);
    outer.text("aggregator", c.outer.aggregator);
    outer.choice("screen", c.outer.screen, outer::screen_action_names());
    outer.number("screen_factor", c.outer.screen_factor, 1.0, 1e9, true);
    outer.integer("sync_moments_every", c.sync_moments_every, 0, 1'000'000);
    outer.finish();
}

void read_async(toml_file::Fields& async, RunConfig& c) {
    async.integer("max_staleness", c.max_staleness, 0, 1'000'000);
    async.choice("stale", c.stale, rounds::stale_action_names());
    async.finish();
}

void read_streaming(toml_file::Fields& streaming, RunConfig& c) {
    streaming.integer("fragments", c.fragments, 1, 1024);
    streaming.integer("tau", c.tau, 0, 1'000'000);
    streaming.number("alpha", c.alpha, 0.0, 1.0);
    streaming.choice("merge", c.merge, diloco::streaming_merge_names());
    streaming.finish();
}

void read_overlap(toml_file::Fields& overlap, RunConfig& c) {
    overlap.number("proxy_scale", c.overlap_proxy_scale, 0.0, 1.0);
    overlap.finish();
}

void read_wire(toml_file::Fields& wire, RunConfig& c) {
    wire.text("codec", c.codec);
    wire.text("down_codec", c.outer.down_codec);
    wire.finish();
}

void read_deadlines(toml_file::Fields& deadlines, RunConfig& c) {
    deadlines.number("join_timeout_s", c.join_timeout_s, 0.0, 1e7, true);
    deadlines.number("round_timeout_s", c.round_timeout_s, 0.0, 1e7, true);
    deadlines.number("heartbeat_timeout_s", c.heartbeat_timeout_s, 0.0, 1e7, true);
    std::string straggler = c.fold_stragglers ? "fold" : "drop";
    deadlines.text_choice("straggler", straggler, {"drop", "fold"});
    c.fold_stragglers = straggler == "fold";
    deadlines.finish();
}

void read_privacy(toml_file::Fields& privacy, RunConfig& c) {
    privacy::DpSettings& dp = c.privacy;
    privacy.text_choice("mode", dp.mode, {"off", "central", "distributed"});
    if (dp.on()) {
        auto needs = [&](const char* key, const char* what) {
            if (!privacy.has(key))
                throw Error(privacy.where("mode") + ": privacy.mode = \"" + dp.mode + "\" needs privacy." + key + ", " + what);
        };
        needs("clip", "the L2 bound every pseudo-gradient is clipped to");
        needs("epsilon", "the run's privacy budget (archipelago privacy shows what a run spends)");
        if (dp.distributed()) needs("honest", "the number of islands assumed to add their share of the noise");
        privacy.number("clip", dp.clip, 0.0, 1e9, true);
        privacy.number("epsilon", dp.epsilon, 0.0, 1000.0, true);
        privacy.number("delta", dp.delta, 0.0, 0.1, true);
        privacy.number("noise_multiplier", dp.noise_multiplier, 0.0, 1e6);
        if (dp.distributed()) {
            privacy.integer("honest", dp.honest, 1, c.islands);
        } else if (privacy.has("honest")) {
            privacy.fail("honest", "is for privacy.mode = \"distributed\" (in central mode the host adds all the noise)");
        }
    } else {
        for (const char* key : {"clip", "epsilon", "delta", "noise_multiplier", "honest"})
            if (privacy.has(key)) privacy.fail(key, "is set, but privacy.mode is \"off\" (set mode = \"central\" or \"distributed\")");
    }
    privacy.finish();
}

// The rules between sections that depend on run.mode; a mode's default is set here, and a value the
// file gives that the mode cannot take is refused, never replaced.
void check_mode(RunConfig& c, const toml_file::Fields& outer, const toml_file::Fields& streaming,
                const toml_file::Fields& wire, const toml_file::Fields& deadlines) {
    // DES-LOC's moments follow a sync round's Δs: an async update holds one island's Δ from another
    // θ, a streaming island never restarts from θ, and an overlapped one trains on with its moments
    // while they travel, so none has a round the moments belong to.
    if (c.mode != RunMode::sync) {
        if (outer.has("sync_moments_every") && c.sync_moments_every > 0)
            throw Error(outer.where("sync_moments_every") + ": outer.sync_moments_every = " +
                        std::to_string(c.sync_moments_every) + " is for sync mode; " + mode_name(c.mode) +
                        " mode does not sync AdamW moments (set it to 0, or leave it out)");
        c.sync_moments_every = 0;
    }
    if (c.mode == RunMode::async) {
        // Async applies each pseudo-gradient as its own update: an aggregator that needs several
        // (trimmed drops the largest and smallest) could never finish a round.
        if (c.outer.aggregator.rfind("trimmed", 0) == 0)
            throw Error(outer.where("aggregator") + ": outer.aggregator '" + c.outer.aggregator +
                        "' needs several pseudo-gradients per update, and async mode has one; use mean, clip, "
                        "median or centered_clip");
        // Its optimizer is Delayed Nesterov, one step per island's Δ (period: the islands); the
        // default in async mode. Another one written in run.toml is refused, never replaced.
        if (outer.has("optimizer") && c.outer.optimizer != diloco::OuterOptimizerKind::delayed_nesterov)
            throw Error(outer.where("optimizer") + ": outer.optimizer = \"" + name_in(diloco::outer_optimizer_names(), c.outer.optimizer) +
                        "\" is not for async mode, which applies each pseudo-gradient as it lands; use "
                        "\"delayed-nesterov\" (the async default), or leave it out");
        c.outer.optimizer = diloco::OuterOptimizerKind::delayed_nesterov;
        c.outer.period = static_cast<uint32_t>(c.islands);
    }
    if (c.mode == RunMode::streaming) {
        // A round is one fragment's sync, H / P steps apart; the τ steps trained while it travels
        // must end before the next fragment's send.
        if (c.steps_per_round / c.fragments <= c.tau)
            throw Error(streaming.where("tau") + ": streaming.tau = " + std::to_string(c.tau) +
                        " must be below inner.steps_per_round / streaming.fragments = " +
                        std::to_string(c.steps_per_round) + " / " + std::to_string(c.fragments) +
                        " (the steps between two fragments' syncs)");
        // Error feedback would need a residual per fragment, which is not built; Streaming DiLoCo
        // sends fp4 without it (docs/rounds.md).
        if (parse_wire_codec(c.codec, wire).error_feedback)
            throw Error(wire.where("codec") + ": wire.codec '" + c.codec +
                        "' has error feedback, which streaming mode does not take; use it without +ef (e.g. fp4+zstd:1)");
        if (c.fold_stragglers)
            throw Error(deadlines.where("straggler") + ": deadlines.straggler = \"fold\" would add a Δ of one fragment "
                        "to the next round's, which is another fragment's; streaming mode drops late ones");
    }
}
}  // namespace

RunConfig parse_run_config(const std::string& text, const std::string& source) {
    const toml::table file = toml_file::parse(text, source);
    toml_file::check_sections(file, source, {"run", "model", "data", "inner", "outer", "async", "streaming", "overlap", "wire", "deadlines", "privacy"});
    static const toml::table empty;
    auto section = [&](const char* name) {
        const toml::table* t = file[name].as_table();
        return toml_file::Fields(t ? *t : empty, source, name);
    };
    RunConfig c;
    toml_file::Fields run = section("run"), model = section("model"), data = section("data"), inner = section("inner"),
                      outer = section("outer"), async = section("async"), streaming = section("streaming"),
                      overlap = section("overlap"), wire = section("wire"), deadlines = section("deadlines"), privacy = section("privacy");
    read_run(run, c);
    read_model(model, c);
    read_data(data, c);
    read_inner(inner, c);
    read_outer(outer, c);
    read_async(async, c);
    read_streaming(streaming, c);
    read_overlap(overlap, c);
    read_wire(wire, c);
    read_deadlines(deadlines, c);
    read_privacy(privacy, c);
    check_mode(c, outer, streaming, wire, deadlines);
    if (c.mode != RunMode::overlap && overlap.has("proxy_scale"))
        throw Error(overlap.where("proxy_scale") + ": overlap.proxy_scale is for overlap mode (run.mode = \"overlap\"); " +
                    mode_name(c.mode) + " mode starts each round from θ");
    if (c.privacy.on())
        check_privacy_composes(c, privacy, outer, deadlines, outer.has("screen"), outer.has("sync_moments_every"));
    // The decay ends at the last round (each fragment's own last update in streaming mode).
    c.outer.total_updates = static_cast<uint64_t>(c.rounds);
    // Codec and aggregator specs are parsed here so a typo fails at start, not at round 1.
    try {
        diloco::check_outer_config(c.outer);
    } catch (const Error& e) {
        throw Error(source + ": [outer] or wire.down_codec: " + e.what());
    }
    parse_wire_codec(c.codec, wire);
    c.toml = text;
    return c;
}

RunConfig load_run_config(const std::string& path) {
    return parse_run_config(read_text_file(path), path);
}

uint64_t run_updates(const RunConfig& c) {
    return static_cast<uint64_t>(c.rounds) * static_cast<uint64_t>(run_fragment_count(c));
}

int run_fragment_count(const RunConfig& c) { return c.mode == RunMode::streaming ? c.fragments : 1; }

const EnumNames<RunMode>& run_mode_names() {
    static const EnumNames<RunMode> names{{"sync", RunMode::sync}, {"async", RunMode::async}, {"streaming", RunMode::streaming},
                                          {"overlap", RunMode::overlap}};
    return names;
}

const char* mode_name(RunMode mode) { return name_in(run_mode_names(), mode).c_str(); }

std::vector<diloco::Fragment> run_fragments(const RunConfig& c, const ModelConfig& model) {
    if (run_fragment_count(c) == 1) return {};
    const ParamLayout layout(model);
    if (static_cast<std::size_t>(c.fragments) > layout.num_blocks())
        throw Error("streaming.fragments = " + std::to_string(c.fragments) + " exceeds the model's " +
                    std::to_string(layout.num_blocks()) + " blocks (a fragment is a set of whole blocks)");
    return diloco::make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), c.fragments);
}

int round_fragment(const RunConfig& c, uint64_t round) {
    return static_cast<int>(round % static_cast<uint64_t>(run_fragment_count(c)));
}

ModelConfig run_model_config(const RunConfig& c, int vocab_from_tokenizer) {
    ModelConfig m = model_preset(c.preset, c.vocab > 0 ? c.vocab : vocab_from_tokenizer);
    if (c.layers > 0) m.num_layers = c.layers;
    if (c.channels > 0) m.channels = c.channels;
    if (c.heads > 0) m.num_heads = c.heads;
    if (c.max_seq_len > 0) m.max_seq_len = c.max_seq_len;
    if (c.kv_heads > 0) m.num_kv_heads = c.kv_heads;
    if (c.ffn_hidden > 0) m.ffn_hidden = c.ffn_hidden;
    if (c.rope_theta > 0.0f) m.rope_theta = c.rope_theta;
    if (c.tied >= 0) m.tied_embeddings = c.tied == 1;
    m.padded_vocab_size = pad_vocab(m.vocab_size);
    validate(m);
    return m;
}

TrainConfig run_train_config(const RunConfig& c, const std::string& train_pattern, const std::string& val_pattern,
                             uint64_t island_seed) {
    TrainConfig t;
    t.B = c.batch;
    t.T = c.seq_len;
    t.grad_accum = c.grad_accum;
    t.steps = c.rounds * c.steps_per_round;
    t.schedule.max_lr = c.lr;
    t.schedule.warmup_steps = c.warmup;
    t.schedule.total_steps = t.steps;
    t.adamw.weight_decay = c.weight_decay;
    t.adamw.grad_clip = c.grad_clip;
    t.optimizer = c.optimizer;
    t.seed = island_seed;
    t.train_pattern = train_pattern;
    t.val_pattern = val_pattern;
    t.val_batches = c.val_batches;
    return t;
}

}  // namespace arch
