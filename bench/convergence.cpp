// bench/convergence.cpp: bench_convergence: the same tokens trained by one island, by data-parallel
// islands, and by DiLoCo islands (fp32, int8, 4-bit with error feedback, top-k with error feedback,
// overlapped in int8, 4-bit and top-k with H fixed or from the link, Streaming DiLoCo in 4-bit, asynchronous at speeds 1, 1, 0.5, 0.25),
// printing each run's val loss, bytes, peak bytes per sync, speed-up over one island in steps and in
// time, epochs read, and a simulated wall-clock over a link. The islands' data is
// cut as the host cuts it (convergence_data.h); the runs are in convergence_runs.h; docs/results.md
// explains every column.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "bench/convergence_data.h"
#include "bench/convergence_runs.h"
#include "core/corpus.h"
#include "core/install_paths.h"
#include "core/param_layout.h"
#include "core/tokenizer.h"
#include "peers/run_config.h"

using namespace arch;
using namespace arch::bench;

namespace {

void print_json(const Row& r) {
    print_row({{"name", r.name},
               {"val_loss", rounded(r.val_loss, 4)},
               {"bytes", std::llround(r.bytes)},
               {"peak_bytes_per_sync", std::llround(r.peak_bytes_per_sync)},
               {"speedup", rounded(r.speedup, 3)},
               {"speedup_capped", r.speedup_capped},
               {"wall_speedup", rounded(r.wall_speedup, 3)},
               {"rounds", r.rounds},
               {"wall_s", rounded(r.wall_s, 1)},
               {"wall_s_hetero", rounded(r.wall_s_hetero, 1)},
               {"epochs", rounded(r.epochs, 4)},
               {"tokens", std::llround(r.tokens)},
               {"steps_per_island", r.steps_per_island},
               {"staleness_mean", rounded(r.staleness_mean, 2)},
               {"staleness_max", rounded(r.staleness_max, 0)},
               {"refused", r.refused},
               {"seconds", rounded(r.seconds, 1)}});
}

void print_table(const std::vector<Row>& rows) {
    const Row* ddp = nullptr;
    for (const Row& r : rows)
        if (r.name == "ddp") ddp = &r;
    std::printf("%-28s %8s %8s %13s %10s %11s %9s %9s %9s %6s %10s %6s %7s\n", "name", "val loss", "vs ddp", "bytes",
                "vs ddp", "peak/sync", "speed-up", "wall x", "wall s", "rounds", "slow isl s", "epochs", "stale");
    for (const Row& r : rows) {
        char vs[16] = "-", fewer[24] = "-", speed[16] = "-", wall_speed[16] = "-", hetero[16] = "-", stale[16] = "-";
        if (ddp) std::snprintf(vs, sizeof(vs), "%+.1f%%", 100.0 * (r.val_loss / ddp->val_loss - 1));
        if (ddp && r.bytes > 0) std::snprintf(fewer, sizeof(fewer), "%.0fx less", ddp->bytes / r.bytes);
        if (r.speedup >= 0) std::snprintf(speed, sizeof(speed), "%s%.2fx", r.speedup_capped ? ">" : "", r.speedup);
        if (r.wall_speedup >= 0)
            std::snprintf(wall_speed, sizeof(wall_speed), "%s%.2fx", r.speedup_capped ? ">" : "", r.wall_speedup);
        if (r.wall_s_hetero >= 0) std::snprintf(hetero, sizeof(hetero), "%.0f", r.wall_s_hetero);
        if (r.staleness_mean >= 0) std::snprintf(stale, sizeof(stale), "%.1f/%.0f", r.staleness_mean, r.staleness_max);
        std::printf("%-28s %8.4f %8s %13.0f %10s %11.0f %9s %9s %9.0f %6d %10s %6.2f %7s\n", r.name.c_str(), r.val_loss, vs,
                    r.bytes, fewer, r.peak_bytes_per_sync, speed, wall_speed, r.wall_s, r.rounds, hetero, r.epochs, stale);
    }
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string fmt(double x) {
    char b[32];
    std::snprintf(b, sizeof(b), "%g", x);
    return b;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_convergence: val loss, bytes, speed-up over one island and simulated wall-clock of one island, "
                 "data parallel and DiLoCo variants on the same tokens"};
    app.option_defaults()->always_capture_default();
    Setup s;
    // The DiLoCo rows start from run.toml's defaults (peers/run_config.h): the outer optimizer,
    // DES-LOC's moment sync, the streaming and async settings.
    const RunConfig run_defaults;
    s.outer = run_defaults.outer;
    s.desloc = run_defaults.sync_moments_every;
    s.fragments = run_defaults.fragments;
    s.tau = run_defaults.tau;
    s.alpha = run_defaults.alpha;
    s.merge = run_defaults.merge;
    s.max_staleness = run_defaults.max_staleness;
    s.stale = run_defaults.stale;
    s.overlap_proxy_scale = run_defaults.overlap_proxy_scale;
    bool json = false, sweep = false;
    std::string corpus = "bench", assign = "interleaved", single_curve;
    double uplink_mbps = 20, downlink_mbps = 100, latency_ms = 50, model_bytes = 0, step_s = 0, sync_overhead_s = 0;
    std::vector<double> sweep_lr = {0.4, 0.7, 1.0}, sweep_momentum = {0.5, 0.8, 0.9};
    std::vector<std::string> only;
    const std::vector<std::string> names = {"single",           "single-same-steps", "ddp",          "diloco-fp32",
                                            "diloco-int8",      "diloco-fp4-ef",     "overlap-int8", "overlap-fp4",
                                            "overlap-fp4-late", "overlap-int8-auto", "overlap-fp4-auto", "streaming-fp4", "streaming-fp4-auto",
                                            "async"};
    // Rows run only when --only names them: ablations of the default rows, the sparse codec (top-k with
    // error feedback both ways, docs/results.md), and diloco-fp32 with island-level differential
    // privacy (docs/privacy.md) at two budgets in both trust modes.
    const std::vector<std::string> extra = {"diloco-fp4", "overlap-int8-late", "diloco-topk-ef", "overlap-topk", "overlap-topk-auto", "dp-central-eps8", "dp-central-eps2", "dp-distributed-eps8",
                                            "dp-distributed-eps2"};
    std::string streaming_codec = "fp4+zstd";
    std::string topk_codec = "topk:frac=0.01+ef+zstd:1";
    app.add_flag("--json", json, "one JSON object per row instead of the table");
    app.add_option("--rounds", s.rounds, "DiLoCo rounds; every run trains rounds*H*islands*B*T tokens")
        ->check(at_least_one());
    app.add_option("--H", s.H, "inner steps per round")->check(at_least_one());
    app.add_option("--islands", s.islands, "islands (DDP workers)")->check(at_least_one());
    app.add_option("--batch", s.B, "batch size B per island step")->check(at_least_one());
    app.add_option("--seq-len", s.T, "sequence length T")->check(at_least_one());
    app.add_option("--lr", s.lr, "inner AdamW peak learning rate");
    add_choice(app, "--inner-optimizer", s.optimizer, inner_optimizer_names(),
               "every row's inner optimizer: adamw, or muon for the blocks' matmul weights (MuLoCo)");
    app.add_option("--outer-lr", s.outer.lr, "outer Nesterov learning rate");
    app.add_option("--outer-momentum", s.outer.momentum, "outer Nesterov momentum");
    app.add_option("--outer-final-lr", s.outer.final_lr, "cosine-decay the outer lr to this at the last round (<0: constant)");
    app.add_option("--outer-warmup", s.outer.lr_warmup, "outer lr warmup, in outer updates");
    app.add_option("--warm-steps", s.warm_steps, "warm start: data-parallel steps on a shard of their own before every row")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--corpus", corpus, "bench (6.2M tokens, data/README.md) or kjv (the bundled Bible, 1.1M)")
        ->check(CLI::IsMember({"kjv", "bench"}));
    app.add_option("--assign", assign, "how islands get chunks: interleaved (IID) or contiguous (non-IID)")
        ->check(CLI::IsMember({"interleaved", "contiguous"}));
    app.add_option("--val-batches", s.val_batches, "B x T batches in each val loss")->check(at_least_one());
    app.add_option("--eval-every", s.eval_every, "steps between the one-island run's val losses")->check(at_least_one());
    app.add_option("--fragments", s.fragments, "streaming: fragments P")->check(at_least_one());
    app.add_option("--tau", s.tau, "streaming: inner steps a fragment's update takes to arrive (overlap)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--alpha", s.alpha, "streaming: merge, θ_local <- α θ_local + (1 - α) θ_global")->check(CLI::Range(0.0, 1.0));
    app.add_option("--desloc", s.desloc,
                   "DiLoCo rows: average AdamW's moments over the islands every K rounds (DES-LOC, run.toml's "
                   "outer.sync_moments_every; 0: never)")
        ->check(CLI::NonNegativeNumber);
    app.add_flag("--moments-fp32", s.moments_fp32,
                 "DES-LOC's moments in fp32, as before protocol 10 (bf16 on the wire otherwise, as the host and peers send them)");
    app.add_option("--max-staleness", s.max_staleness, "async: updates a pseudo-gradient may be behind")
        ->check(CLI::NonNegativeNumber);
    add_choice(app, "--stale", s.stale, rounds::stale_action_names(), "async: what happens to an older one");
    app.add_option("--step-s", step_s, "simulated seconds per inner step (0: measured here)")->check(CLI::NonNegativeNumber);
    app.add_option("--uplink-mbps", uplink_mbps, "simulated island uplink, Mbit/s")->check(CLI::PositiveNumber);
    app.add_option("--downlink-mbps", downlink_mbps, "simulated island downlink, Mbit/s")->check(CLI::PositiveNumber);
    app.add_option("--latency-ms", latency_ms, "simulated one-way latency, ms")->check(CLI::NonNegativeNumber);
    app.add_option("--sync-overhead-s", sync_overhead_s,
                   "simulated seconds a sync costs beyond the link (encode, the host's work, applying the update): "
                   "bench_rounds' idle_s_per_sync at the model's size")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--auto-target", s.auto_steps.target, "the *-auto rows: the busy share H from the link aims at")
        ->check(CLI::Range(0.05, 0.999));
    app.add_option("--auto-min-H", s.auto_steps.min_steps, "the *-auto rows: the least H")->check(at_least_one());
    app.add_option("--auto-max-H", s.auto_steps.max_steps, "the *-auto rows: the most H")->check(at_least_one());
    app.add_option("--overlap-proxy-scale", s.overlap_proxy_scale,
                   "overlap rows: an island starts its next round from θ_t − this × its own Δ (1: from where it is; "
                   "default: run.toml's overlap.proxy_scale)");
    app.add_option("--model-bytes", model_bytes, "scale the simulated traffic to a model of this many fp32 bytes (0: this one)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--single-curve", single_curve,
                   "speed-ups from the one-island curve in this file (the stderr of an earlier run with the same "
                   "settings line), instead of running `single` again");
    app.add_flag("--sweep", sweep, "single (unless --only leaves it out), then diloco-fp32 over every --sweep-lr x --sweep-momentum");
    app.add_option("--sweep-lr", sweep_lr, "outer learning rates of --sweep")->delimiter(',');
    app.add_option("--sweep-momentum", sweep_momentum, "outer momenta of --sweep")->delimiter(',');
    app.add_option("--only", only, "runs to do, comma-separated")->delimiter(',')->check(CLI::IsMember(concat(names, extra)))->default_str("all");
    add_choice(app, "--merge", s.merge, diloco::streaming_merge_names(),
               "streaming: mix (by --alpha) or carry (θ_global plus the island's progress since it sent)");
    app.add_option("--dp-clip", s.dp_clip, "dp-* rows: the L2 clip of each pseudo-gradient")->check(CLI::PositiveNumber);
    app.add_option("--topk-codec", topk_codec, "the *-topk rows: the sparse codec both ways, with error feedback on each side");
    app.add_option("--streaming-codec", streaming_codec, "streaming: the codec both ways (the paper's: fp4, no error feedback)");
    return run_main(app, argc, argv, [&] {
        const PreparedCorpus prepared = corpus == "bench" ? ensure_bench_corpus() : ensure_bundled_corpus();
        s.model = model_preset("tiny", Tokenizer::load(prepared.tokenizer_path).vocab_size());
        s.val = prepared.val_pattern;
        const uint64_t window = static_cast<uint64_t>(s.B) * s.T;
        const uint64_t warm_tokens = s.warm_steps > 0 ? static_cast<uint64_t>(s.warm_steps) * s.islands * window + window + 1 : 0;
        s.data = make_bench_data(prepared.train_pattern, s.islands, assign, window + 1, warm_tokens,
                                 user_data_dir() + "/bench-convergence/" + corpus);
        s.speeds = {1.0, 1.0, 0.5, 0.25};
        s.speeds.resize(static_cast<std::size_t>(s.islands), 1.0);
        s.fragments = std::min<int>(s.fragments, ParamLayout(s.model).num_blocks());
        s.link.up_bytes_per_s = uplink_mbps * 1e6 / 8;
        s.link.down_bytes_per_s = downlink_mbps * 1e6 / 8;
        s.link.latency_s = latency_ms / 1e3;
        s.link.sync_overhead_s = sync_overhead_s;
        const double fp32 = 4.0 * static_cast<double>(ParamLayout(s.model).num_params());
        s.link.byte_scale = model_bytes > 0 ? model_bytes / fp32 : 1.0;
        s.link.step_s = step_s > 0 ? step_s : measure_step_s(s);
        const double tokens = static_cast<double>(s.rounds) * s.H * s.islands * s.B * s.T;
        const std::string warm = (s.warm_steps > 0 ? ", warm start " + std::to_string(s.warm_steps) + " steps" : "") +
                                 (s.optimizer != InnerOptimizer::adamw ? ", inner " + name_in(inner_optimizer_names(), s.optimizer) : "");
        char settings[512];
        std::snprintf(settings, sizeof(settings),
                      "bench_convergence: model %s, %d islands (%s), H=%d, %d rounds, B=%d T=%d, %.2fM tokens each run of "
                      "%.2fM (%llu-token chunks)%s; clock: %.3f s/step, %g/%g Mbit/s, %g ms, traffic x%.3g, "
                      "%g s a sync beyond the link, auto H %g in [%u, %u]",
                      describe(s.model).c_str(), s.islands, assign.c_str(), s.H, s.rounds, s.B, s.T, tokens / 1e6,
                      static_cast<double>(s.data.all_tokens) / 1e6, static_cast<unsigned long long>(s.data.chunk_tokens),
                      warm.c_str(), s.link.step_s, uplink_mbps, downlink_mbps, latency_ms, s.link.byte_scale,
                      sync_overhead_s, s.auto_steps.target, s.auto_steps.min_steps, s.auto_steps.max_steps);
        std::fprintf(stderr, "%s\n", settings);
        s.start = warm_start(s);
        auto want = [&](const std::string& n) { return only.empty() || std::ranges::count(only, n) > 0; };
        std::vector<Row> rows;
        const Row* single = nullptr;
        auto emit = [&](Row r) {
            if (single) set_speedup(r, *single, s.link.step_s);
            if (json) print_json(r);
            rows.push_back(std::move(r));
        };
        Row single_row;
        if (!single_curve.empty() && !want("single")) {
            single_row = read_single_curve(single_curve, settings);
            single = &single_row;
            std::fprintf(stderr, "speed-ups against the one-island curve of %s (%zu points, the same settings)\n",
                         single_curve.c_str(), single_row.curve.size());
        }
        if (want("single")) {  // first: every later row's speed-up is read off its curve
            single_row = run_single(s, false);
            single_row.speedup = single_row.wall_speedup = 1;  // by definition (its curve's noise could put an earlier point lower)
            emit(single_row);
            single = &single_row;
        }
        if (sweep) {
            for (double lr : sweep_lr)
                for (double mu : sweep_momentum) {
                    Setup point = s;
                    point.outer.lr = static_cast<float>(lr);
                    point.outer.momentum = static_cast<float>(mu);
                    emit(run_diloco(point, "diloco-fp32 lr=" + fmt(lr) + " mu=" + fmt(mu), "fp32"));
                }
            if (!json) print_table(rows);
            return;
        }
        if (want("single-same-steps")) emit(run_single(s, true));
        if (want("ddp")) emit(run_ddp(s));
        if (want("diloco-fp32")) emit(run_diloco(s, "diloco-fp32", "fp32"));
        if (want("diloco-int8")) emit(run_diloco(s, "diloco-int8", "int8:block=256+zstd:1"));
        if (want("diloco-fp4-ef")) emit(run_diloco(s, "diloco-fp4-ef", "fp4+ef+zstd"));
        if (want("overlap-int8")) emit(run_overlap(s, "overlap-int8", "int8:block=256+zstd:1", false));
        if (want("overlap-fp4")) emit(run_overlap(s, "overlap-fp4", "fp4+ef+zstd", false));
        if (want("overlap-fp4-late")) emit(run_overlap(s, "overlap-fp4-late", "fp4+ef+zstd", false, true));
        if (!only.empty() && want("overlap-int8-late"))
            emit(run_overlap(s, "overlap-int8-late", "int8:block=256+zstd:1", false, true));
        if (want("overlap-int8-auto")) emit(run_overlap(s, "overlap-int8-auto", "int8:block=256+zstd:1", true));
        if (want("overlap-fp4-auto")) emit(run_overlap(s, "overlap-fp4-auto", "fp4+ef+zstd", true));
        if (!only.empty() && want("diloco-topk-ef")) emit(run_diloco(s, "diloco-topk-ef", topk_codec));
        if (!only.empty() && want("overlap-topk")) emit(run_overlap(s, "overlap-topk", topk_codec, false));
        if (!only.empty() && want("overlap-topk-auto")) emit(run_overlap(s, "overlap-topk-auto", topk_codec, true));
        if (!only.empty() && want("diloco-fp4")) emit(run_diloco(s, "diloco-fp4", "fp4+zstd"));
        if (want("streaming-fp4")) emit(run_streaming(s, streaming_codec == "fp4+zstd" ? "streaming-fp4" : "streaming " + streaming_codec, streaming_codec));
        if (want("streaming-fp4-auto"))
            emit(run_streaming_auto(s, streaming_codec == "fp4+zstd" ? "streaming-fp4-auto" : "streaming-auto " + streaming_codec,
                                    streaming_codec));
        if (want("async")) emit(run_async(s, "async", "fp32"));
        for (const std::string mode : {"central", "distributed"})
            for (const double epsilon : {8.0, 2.0}) {
                const std::string name = "dp-" + mode + "-eps" + fmt(epsilon);
                const DpRow dp{mode, epsilon, s.dp_clip};
                if (!only.empty() && want(name)) emit(run_diloco(s, name, "fp32", &dp));
            }
        if (!json) print_table(rows);
    });
}
