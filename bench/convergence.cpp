// bench/convergence.cpp: bench_convergence: the same total tokens of the bundled corpus trained six
// ways, printing final val loss and total bytes exchanged: (a) one island, (b) 4 islands averaging
// gradients every step (data parallel), (c) DiLoCo 4 islands H=50 fp32, (d) int8, (e) 4-bit with
// error feedback, (f) async (Delayed Nesterov + Dynamic Local Updates) with island speeds 1,1,0.5,0.25.
// Islands run in this one process through the same GlobalModel/IslandWorker code as the daemons.
// Bytes: what each island would send and receive (parameter-server view: up + down per sync).
// Usage: bench_convergence [--json] [--rounds R] [--H H] [--islands N] [--batch B] [--seq-len T]
//                          [--lr LR] [--outer-lr X] [--outer-momentum M] [--only NAME,...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_cli.h"
#include "core/corpus.h"
#include "core/install_paths.h"
#include "core/data_split.h"
#include "core/error.h"
#include "core/tokenizer.h"
#include "kernels/cpu/cpu_backend.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/island_worker.h"

using namespace arch;
using namespace arch::diloco;

namespace {

struct Setup {
    ModelConfig model;
    int B = 8, T = 64, H = 50, islands = 4, rounds = 8;
    float lr = 2e-3f, outer_lr = 0.7f, outer_momentum = 0.9f;
    std::string train, val;
    std::vector<std::string> island_shards;
    int val_batches = 32;
};

struct Row {
    std::string name;
    float val_loss = 0;
    double bytes = 0;
    double tokens = 0;
    double seconds = 0;
};

TrainConfig train_config(const Setup& s, const std::string& data, int total_steps, int grad_accum, uint64_t seed) {
    TrainConfig t;
    t.B = s.B;
    t.T = s.T;
    t.grad_accum = grad_accum;
    t.steps = total_steps;
    t.schedule.max_lr = s.lr;
    t.schedule.warmup_steps = std::max(1, total_steps / 20);
    t.schedule.total_steps = total_steps;
    t.seed = seed;
    t.train_pattern = data;
    return t;
}

std::vector<float> initial_theta(const Setup& s) {
    auto backend = make_cpu_backend();
    GPT2 model(s.model, *backend);
    model.init_weights(42);
    std::vector<float> theta(model.num_params());
    model.get_params(theta);
    return theta;
}

float val_loss(const Setup& s, std::span<const float> theta) {
    auto backend = make_cpu_backend();
    GPT2 model(s.model, *backend);
    model.set_params(theta);
    DataLoader val(s.val, s.B, s.T, DataOrder::sequential, 0);
    return mean_loss(model, val, s.B, s.T, s.val_batches);
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// (a) one island, all the tokens, B*T per step (same_steps: only as many steps as each DiLoCo
// island takes, i.e. the same wall-clock as one island, a quarter of the tokens).
Row run_single(const Setup& s, bool same_steps = false) {
    const double t0 = now_s();
    const int steps = s.rounds * s.H * (same_steps ? 1 : s.islands);
    IslandWorker w(s.model, train_config(s, s.train, steps, 1, 1), "fp32");
    const std::vector<float> theta = initial_theta(s);
    w.run_round(theta, steps, [&](const StepStats& st) {
        if (st.step % 100 == 0) std::fprintf(stderr, "  single: step %d/%d loss %.3f\n", st.step, steps, st.loss);
    });
    std::vector<float> out(theta.size());
    w.get_params(out);
    return {same_steps ? "single-same-steps" : "single", val_loss(s, out), 0, static_cast<double>(steps) * s.B * s.T,
            now_s() - t0};
}

// (b) data parallel: every step averages the islands' gradients (gradient accumulation over one
// micro-batch per island is the same arithmetic); bytes: each island sends and receives P floats.
Row run_ddp(const Setup& s) {
    const double t0 = now_s();
    const int steps = s.rounds * s.H;
    IslandWorker w(s.model, train_config(s, s.train, steps, s.islands, 1), "fp32");
    const std::vector<float> theta = initial_theta(s);
    w.run_round(theta, steps, [&](const StepStats& st) {
        if (st.step % 50 == 0) std::fprintf(stderr, "  ddp: step %d/%d loss %.3f\n", st.step, steps, st.loss);
    });
    std::vector<float> out(theta.size());
    w.get_params(out);
    const double bytes = 2.0 * s.islands * steps * theta.size() * sizeof(float);
    return {"ddp", val_loss(s, out), bytes, static_cast<double>(steps) * s.B * s.T * s.islands, now_s() - t0};
}

// (c)-(f): DiLoCo rounds. steps_per_island[i] inner steps for island i each round; async applies each
// island's pseudo-gradient as its own outer update (Delayed Nesterov), sync aggregates them.
Row run_diloco(const Setup& s, const std::string& name, const std::string& codec, const std::vector<double>& speeds,
               bool async) {
    const double t0 = now_s();
    std::vector<int> steps(s.islands);
    double tokens_per_round = 0;
    for (int i = 0; i < s.islands; ++i) {
        steps[i] = std::max(1, static_cast<int>(std::lround(s.H * speeds[i])));  // Dynamic Local Updates
        tokens_per_round += static_cast<double>(steps[i]) * s.B * s.T;
    }
    const double budget = static_cast<double>(s.rounds) * s.H * s.B * s.T * s.islands;
    const int rounds = static_cast<int>(std::ceil(budget / tokens_per_round - 1e-9));
    OuterConfig oc;
    oc.lr = s.outer_lr;
    oc.momentum = s.outer_momentum;
    oc.down_codec = codec;
    if (async) {
        oc.optimizer = "delayed-nesterov";
        oc.period = static_cast<uint32_t>(s.islands);
    }
    GlobalModel global(initial_theta(s), oc);
    std::vector<std::unique_ptr<IslandWorker>> islands;
    for (int i = 0; i < s.islands; ++i)
        islands.push_back(std::make_unique<IslandWorker>(
            s.model, train_config(s, s.island_shards[i], rounds * steps[i], 1, 100 + i), codec));
    double bytes = 0, tokens = 0;
    for (int r = 0; r < rounds; ++r) {
        std::vector<RoundResult> results;
        std::vector<std::vector<float>> deltas;
        double loss = 0;
        for (int i = 0; i < s.islands; ++i) {
            results.push_back(islands[i]->run_round(global.theta(), steps[i]));
            deltas.push_back(compression::decode(results.back().payload, global.theta().size()));
            bytes += results.back().payload.size();
            tokens += results.back().tokens;
            loss += results.back().mean_loss / s.islands;
        }
        if (async) {
            for (int i = 0; i < s.islands; ++i) {  // arrival order: fastest first (they finish together under DyLU)
                const outer::Contribution c{deltas[i], results[i].tokens};
                const std::vector<std::byte> update = global.make_update(std::span(&c, 1));
                bytes += static_cast<double>(update.size()) * s.islands;
                global.apply_update(update);
            }
        } else {
            std::vector<outer::Contribution> cs;
            for (int i = 0; i < s.islands; ++i) cs.push_back({deltas[i], results[i].tokens});
            const std::vector<std::byte> update = global.make_update(cs);
            bytes += static_cast<double>(update.size()) * s.islands;
            global.apply_update(update);
        }
        std::fprintf(stderr, "  %s: round %d/%d inner loss %.3f, %.1f MB so far\n", name.c_str(), r + 1, rounds, loss,
                     bytes / 1e6);
    }
    return {name, val_loss(s, global.theta()), bytes, tokens, now_s() - t0};
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"bench_convergence: final val loss and bytes exchanged of one island, DDP and DiLoCo variants"};
    app.option_defaults()->always_capture_default();
    Setup s;
    bool json = false;
    std::vector<std::string> only;
    const std::vector<std::string> names = {"single",      "single-same-steps", "ddp",  "diloco-fp32",
                                            "diloco-int8", "diloco-fp4-ef",     "async"};
    app.add_flag("--json", json, "one JSON object per row instead of the table");
    app.add_option("--rounds", s.rounds, "DiLoCo rounds; every run trains rounds*H*islands*B*T tokens")
        ->check(bench::at_least_one());
    app.add_option("--H", s.H, "inner steps per round")->check(bench::at_least_one());
    app.add_option("--islands", s.islands, "islands (DDP workers)")->check(bench::at_least_one());
    app.add_option("--batch", s.B, "batch size B per island step");
    app.add_option("--seq-len", s.T, "sequence length T");
    app.add_option("--lr", s.lr, "inner AdamW peak learning rate");
    app.add_option("--outer-lr", s.outer_lr, "outer Nesterov learning rate");
    app.add_option("--outer-momentum", s.outer_momentum, "outer Nesterov momentum");
    app.add_option("--only", only, "runs to do, comma-separated")
        ->delimiter(',')
        ->check(CLI::IsMember(names))
        ->default_str("all");
    return bench::run_main(app, argc, argv, [&] {
        const PreparedCorpus corpus = ensure_bundled_corpus();
        s.model = model_preset("tiny", Tokenizer::load(corpus.tokenizer_path).vocab_size());
        s.train = corpus.train_pattern;
        s.val = corpus.val_pattern;
        s.island_shards = split_for_islands(s.train, s.islands, user_data_dir() + "/islands", static_cast<std::size_t>(s.B) * s.T + 1);
        std::fprintf(stderr, "bench_convergence: model %s, %d islands, H=%d, %d rounds, B=%d T=%d, %.2fM tokens each run\n",
                     describe(s.model).c_str(), s.islands, s.H, s.rounds, s.B, s.T,
                     static_cast<double>(s.rounds) * s.H * s.islands * s.B * s.T / 1e6);
        std::vector<double> equal(s.islands, 1.0), speeds = {1.0, 1.0, 0.5, 0.25};
        speeds.resize(s.islands, 1.0);
        auto want = [&](const std::string& n) { return only.empty() || std::ranges::count(only, n) > 0; };
        std::vector<Row> rows;
        auto emit = [&](const Row& r) {
            rows.push_back(r);
            if (json)
                bench::print_row({{"name", r.name},
                                  {"val_loss", bench::rounded(r.val_loss, 4)},
                                  {"bytes", std::llround(r.bytes)},
                                  {"tokens", std::llround(r.tokens)},
                                  {"seconds", bench::rounded(r.seconds, 1)}});
        };
        if (want("single")) emit(run_single(s));
        if (want("single-same-steps")) emit(run_single(s, true));
        if (want("ddp")) emit(run_ddp(s));
        if (want("diloco-fp32")) emit(run_diloco(s, "diloco-fp32", "fp32", equal, false));
        if (want("diloco-int8")) emit(run_diloco(s, "diloco-int8", "int8:block=256+zstd:1", equal, false));
        if (want("diloco-fp4-ef")) emit(run_diloco(s, "diloco-fp4-ef", "fp4+ef+zstd", equal, false));
        if (want("async")) emit(run_diloco(s, "async", "fp32", speeds, true));
        if (!json) {
            double ddp_bytes = 0;
            for (const Row& r : rows)
                if (r.name == "ddp") ddp_bytes = r.bytes;
            std::printf("%-15s %9s %14s %12s %10s %9s\n", "name", "val loss", "bytes", "vs ddp", "tokens", "seconds");
            for (const Row& r : rows) {
                char ratio[32] = "-";
                if (ddp_bytes > 0 && r.bytes > 0) std::snprintf(ratio, sizeof(ratio), "%.0fx fewer", ddp_bytes / r.bytes);
                std::printf("%-15s %9.4f %14.0f %12s %10.0f %9.1f\n", r.name.c_str(), r.val_loss, r.bytes, ratio,
                            r.tokens, r.seconds);
            }
        }
    });
}
