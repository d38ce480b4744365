// bench/convergence_runs.cpp: the runs of bench_convergence (convergence_runs.h).
#include "bench/convergence_runs.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <queue>

#include <pmmintrin.h>
#include <xmmintrin.h>

#include "compression/codec.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/gpt2.h"
#include "core/rng.h"
#include "core/trainer.h"
#include "kernels/cpu/cpu_backend.h"
#include "peers/diloco/fragments.h"
#include "peers/diloco/island_worker.h"
#include "peers/diloco/streaming_island.h"
#include "peers/rounds/local_steps.h"
#include "peers/rounds/staleness.h"
#include "privacy/gaussian_mechanism.h"
#include "privacy/rdp_accountant.h"

namespace arch::bench {
namespace {
// A dp row's noise drives θ far from where training keeps it, and the matmuls of such a model meet
// subnormal floats, which cost this CPU about ten times a normal one: without flushing them a dp row
// ran 15 s rounds into several minutes. Flushed to zero on every OpenMP thread while the row runs.
class FlushSubnormals {
public:
    FlushSubnormals() { each_thread(_MM_FLUSH_ZERO_ON, _MM_DENORMALS_ZERO_ON); }
    ~FlushSubnormals() { each_thread(_MM_FLUSH_ZERO_OFF, _MM_DENORMALS_ZERO_OFF); }

private:
    static void each_thread(unsigned ftz, unsigned daz) {
#pragma omp parallel
        {
            _MM_SET_FLUSH_ZERO_MODE(ftz);
            _MM_SET_DENORMALS_ZERO_MODE(daz);
        }
        _MM_SET_FLUSH_ZERO_MODE(ftz);
        _MM_SET_DENORMALS_ZERO_MODE(daz);
    }
};


using diloco::GlobalModel;
using diloco::IslandWorker;
using diloco::OuterConfig;
using diloco::RoundResult;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

TrainConfig train_config(const Setup& s, const std::string& shard, int total_steps, int grad_accum, uint64_t seed) {
    TrainConfig t;
    t.B = s.B;
    t.T = s.T;
    t.grad_accum = grad_accum;
    t.steps = std::max(1, total_steps);
    t.schedule.max_lr = s.lr;
    t.optimizer = s.optimizer;
    t.schedule.warmup_steps = std::max(1, t.steps / 20);
    t.schedule.total_steps = t.steps;
    t.seed = seed;
    t.order = DataOrder::sequential;  // each shard is already a shuffled order of chunks: read once, in turn
    t.train_pattern = shard;
    return t;
}

double tokens_per_step(const Setup& s) { return static_cast<double>(s.B) * s.T; }

// The end of every islands run: the global θ's val loss, the tokens of all islands, the most epochs
// any island read of its own shard, and the bench's own time since t0.
void finish_islands_row(const Setup& s, Row& row, std::span<const float> theta, const std::vector<double>& tokens,
                        int steps_per_island, double t0) {
    row.val_loss = val_loss(s, theta);
    row.epochs = 0;
    for (int i = 0; i < s.islands; ++i) {
        row.tokens += tokens[i];
        row.epochs = std::max(row.epochs, tokens[i] / static_cast<double>(s.data.island_tokens[i]));
    }
    row.steps_per_island = steps_per_island;
    row.seconds = now_s() - t0;
}

std::vector<std::unique_ptr<IslandWorker>> make_islands(const Setup& s, const std::vector<int>& total_steps,
                                                        const std::string& codec) {
    std::vector<std::unique_ptr<IslandWorker>> out;
    for (int i = 0; i < s.islands; ++i)
        out.push_back(std::make_unique<IslandWorker>(
            s.model, train_config(s, s.data.island_shards[i], total_steps[i], 1, 100 + static_cast<uint64_t>(i)), codec));
    return out;
}

// DES-LOC's moment sync: every island's AdamW m and v replaced by their mean over the islands,
// weighted by the tokens of each island's Δ and summed in island order, as the host's MomentPool does.
// Each island sends its m and v in bf16 with this sync's Δ and gets the means back in bf16 (protocol
// 10; with fp32, as before it: each rounding left out and 4 bytes a value): counted in the sync's up
// and down bytes and the row's total.
void sync_adamw_moments(std::vector<std::unique_ptr<IslandWorker>>& islands, const std::vector<double>& tokens,
                        bool fp32, double& up, double& down, Row& row) {
    const std::size_t n = islands.front()->num_params();
    auto wire = [fp32](float x) { return fp32 ? x : bf16_to_float(float_to_bf16(x)); };
    std::vector<float> m(n), v(n), m_mean(n, 0.0f), v_mean(n, 0.0f);
    double total = 0;
    for (double t : tokens) total += t;
    for (std::size_t i = 0; i < islands.size(); ++i) {
        islands[i]->get_adamw_state(m, v);
        const float w = static_cast<float>(tokens[i] / total);
        for (std::size_t k = 0; k < n; ++k) m_mean[k] += w * wire(m[k]), v_mean[k] += w * wire(v[k]);
    }
    for (std::size_t k = 0; k < n; ++k) m_mean[k] = wire(m_mean[k]), v_mean[k] = wire(v_mean[k]);
    for (auto& w : islands) w->set_adamw_state(m_mean, v_mean);
    const double moments = 2.0 * static_cast<double>(n) * (fp32 ? 4 : 2);
    up += moments;
    down += moments;
    row.bytes += 2 * moments * static_cast<double>(islands.size());
}

// The seed-42 init every run starts from without a warm start.
std::vector<float> seed_theta(const ModelConfig& config) {
    auto backend = make_cpu_backend();
    GPT2 model(config, *backend);
    model.init_weights(42);
    std::vector<float> theta(model.num_params());
    model.get_params(theta);
    return theta;
}

}  // namespace

std::vector<float> initial_theta(const Setup& s) {
    if (!s.start.empty()) return s.start;
    return seed_theta(s.model);
}

std::vector<float> warm_start(const Setup& s) {
    std::vector<float> theta = seed_theta(s.model);
    if (s.warm_steps <= 0) return theta;
    IslandWorker w(s.model, train_config(s, s.data.warm_shard, s.warm_steps, s.islands, 3), "fp32");
    w.set_params(theta);
    for (int done = 0; done < s.warm_steps;) {
        const RoundResult r = w.run_steps(std::min(100, s.warm_steps - done));
        done += r.steps;
        std::fprintf(stderr, "  warm start: step %d/%d loss %.3f\n", done, s.warm_steps, r.mean_loss);
    }
    w.get_params(theta);
    std::fprintf(stderr, "  warm start: val loss %.4f; every row starts here\n", val_loss(s, theta));
    return theta;
}

float val_loss(const Setup& s, std::span<const float> theta) {
    auto backend = make_cpu_backend();
    GPT2 model(s.model, *backend);
    model.set_params(theta);
    // The same val_batches windows for every row and every call, drawn over the whole val split.
    DataLoader val(s.val, s.B, s.T, DataOrder::shuffled, 0);
    return mean_loss(model, val, s.B, s.T, s.val_batches);
}

double measure_step_s(const Setup& s) {
    IslandWorker w(s.model, train_config(s, s.data.all_shard, 100, 1, 7), "fp32");
    w.set_params(initial_theta(s));
    w.run_steps(3);
    const double t0 = now_s();
    w.run_steps(10);
    return (now_s() - t0) / 10;
}

// One island, all the tokens (same_steps: only as many steps as each DiLoCo island takes, so the same
// time as one island of the DiLoCo run, a quarter of the tokens). Val loss every eval_every steps.
Row run_single(const Setup& s, bool same_steps) {
    const double t0 = now_s();
    Row row;
    row.name = same_steps ? "single-same-steps" : "single";
    const int steps = s.rounds * s.H * (same_steps ? 1 : s.islands);
    IslandWorker w(s.model, train_config(s, s.data.all_shard, steps, 1, 1), "fp32");
    const std::vector<float> theta = initial_theta(s);
    std::vector<float> now(theta.size());
    w.set_params(theta);
    if (!same_steps) row.curve.emplace_back(0, val_loss(s, theta));
    for (int done = 0; done < steps;) {
        const int n = std::min(s.eval_every, steps - done);
        w.run_steps(n);
        done += n;
        if (!same_steps) {
            w.get_params(now);
            row.curve.emplace_back(done, val_loss(s, now));
            std::fprintf(stderr, "  %s: step %d/%d val loss %.4f\n", row.name.c_str(), done, steps, row.curve.back().second);
        }
    }
    w.get_params(now);
    row.val_loss = same_steps ? val_loss(s, now) : row.curve.back().second;
    row.tokens = steps * tokens_per_step(s);
    row.epochs = row.tokens / static_cast<double>(s.data.all_tokens);
    row.steps_per_island = steps;
    row.wall_s = steps * s.link.step_s;
    row.seconds = now_s() - t0;
    return row;
}

// Data parallel: every step averages the islands' gradients (gradient accumulation over one
// micro-batch per island is the same arithmetic); each island sends and receives P floats a step.
Row run_ddp(const Setup& s) {
    const double t0 = now_s();
    Row row;
    row.name = "ddp";
    const int steps = s.rounds * s.H;
    IslandWorker w(s.model, train_config(s, s.data.all_shard, steps, s.islands, 1), "fp32");
    const std::vector<float> theta = initial_theta(s);
    w.set_params(theta);
    for (int done = 0; done < steps; done += std::min(100, steps - done)) {
        const RoundResult r = w.run_steps(std::min(100, steps - done));
        std::fprintf(stderr, "  ddp: step %d/%d loss %.3f\n", done + r.steps, steps, r.mean_loss);
    }
    std::vector<float> out(theta.size());
    w.get_params(out);
    const double fp32 = static_cast<double>(theta.size()) * sizeof(float);
    row.val_loss = val_loss(s, out);
    row.bytes = 2.0 * s.islands * steps * fp32;
    row.peak_bytes_per_sync = 2 * fp32;
    row.tokens = steps * tokens_per_step(s) * s.islands;
    row.epochs = row.tokens / static_cast<double>(s.data.all_tokens);
    row.steps_per_island = steps;
    row.wall_s = steps * (s.link.step_s + s.link.send_s(fp32) + s.link.receive_s(fp32));
    row.seconds = now_s() - t0;
    return row;
}

// DiLoCo, synchronous: every island starts each round from the global θ, runs H steps, sends its
// pseudo-gradient; the host averages them (weighted by tokens) into one outer step.
Row run_diloco(const Setup& s, const std::string& name, const std::string& codec, const DpRow* dp) {
    const double t0 = now_s();
    constexpr double kDpDelta = 1e-5;
    const double sigma = dp ? privacy::noise_for_epsilon(1.0, static_cast<uint64_t>(s.rounds), dp->epsilon, kDpDelta) : 0;
    privacy::NoiseSource noise;
    std::optional<FlushSubnormals> flush;
    if (dp) flush.emplace();
    if (dp) std::fprintf(stderr, "  %s: noise multiplier %.4f for epsilon %g at delta %g over %d rounds, clip %g\n", name.c_str(),
                         sigma, dp->epsilon, kDpDelta, s.rounds, dp->clip);
    Row row;
    row.name = name;
    OuterConfig oc = s.outer;
    oc.down_codec = codec;
    oc.total_updates = static_cast<uint64_t>(s.rounds);
    GlobalModel global(initial_theta(s), oc);
    auto islands = make_islands(s, std::vector<int>(s.islands, s.rounds * s.H), codec);
    std::vector<double> tokens(s.islands, 0);
    const double slowest = *std::ranges::min_element(s.speeds);
    row.wall_s = row.wall_s_hetero = 0;
    for (int r = 0; r < s.rounds; ++r) {
        std::vector<std::vector<float>> deltas;
        std::vector<double> weights;
        double loss = 0, up = 0;
        for (int i = 0; i < s.islands; ++i) {
            const RoundResult res = islands[i]->run_round(global.theta(), s.H);
            deltas.push_back(compression::decode(res.payload, global.theta().size()));
            weights.push_back(res.tokens);
            tokens[i] += res.tokens;
            loss += res.mean_loss / s.islands;
            up = std::max(up, static_cast<double>(res.payload.size()));
            row.bytes += static_cast<double>(res.payload.size());
        }
        if (dp) {  // fp32 travels exactly, so noise added here is the noise an island adds before encoding
            std::vector<double> norms;
            for (auto& d : deltas) {
                norms.push_back(privacy::clip_l2(d, dp->clip));
                if (dp->mode == "distributed") privacy::add_island_share(d, dp->clip, sigma, s.islands, noise);
            }
            if (dp->mode == "central") privacy::add_central_noise(deltas[0], dp->clip, sigma, noise);
            std::ranges::fill(weights, 1.0);  // DP-FedAvg's mean: every island counts the same
            std::ranges::sort(norms);
            std::fprintf(stderr, "  %s: round %d median norm before the clip %.4g, epsilon spent %.3f\n", name.c_str(), r + 1,
                         norms[norms.size() / 2], privacy::epsilon_spent(1.0, sigma, static_cast<uint64_t>(r + 1), kDpDelta).epsilon);
        }
        std::vector<outer::WeightedDelta> cs;
        for (int i = 0; i < s.islands; ++i) cs.push_back({deltas[i], weights[i]});
        const std::vector<std::byte> update = global.make_update(cs);
        global.apply_update(update);
        double down = static_cast<double>(update.size());
        row.bytes += down * s.islands;
        // DES-LOC's moments would carry un-noised signal from every island: the dp rows leave them out,
        // as run.toml's [privacy] refuses them.
        if (!dp && s.desloc > 0 && (r + 1) % s.desloc == 0) sync_adamw_moments(islands, weights, s.moments_fp32, up, down, row);
        row.peak_bytes_per_sync = std::max(row.peak_bytes_per_sync, up + down);
        const double comm = s.link.sync_s(up, down);
        row.wall_s += s.H * s.link.step_s + comm;
        row.wall_s_hetero += s.H * s.link.step_s / slowest + comm;  // a sync round waits for the slowest
        std::fprintf(stderr, "  %s: round %d/%d inner loss %.3f, %.1f MB so far\n", name.c_str(), r + 1, s.rounds, loss,
                     row.bytes / 1e6);
    }
    finish_islands_row(s, row, global.theta(), tokens, s.rounds * s.H, t0);
    row.rounds = s.rounds;
    return row;
}

// Streaming DiLoCo: P fragments, fragment p sent after the steps fragment_due names; its update is
// applied τ steps later (the island trained on meanwhile: that is the overlap), and merged into the
// island's own fragment by the run's rule (diloco::merge_fragment: mix by α, or carry). At the end
// every fragment is synced once more, so the final θ holds all the training. Every island holds the
// same global θ (GlobalModel), fragment by fragment.
Row run_streaming(const Setup& s, const std::string& name, const std::string& codec) {
    const double t0 = now_s();
    Row row;
    row.name = name;
    const ParamLayout layout(s.model);
    std::vector<diloco::Fragment> fragments =
        diloco::make_fragments(layout.num_blocks(), layout.block_size(), layout.num_params(), s.fragments);
    const int P = s.fragments, steps = s.rounds * s.H;
    OuterConfig oc = s.outer;
    oc.down_codec = codec;
    oc.total_updates = static_cast<uint64_t>(s.rounds);
    GlobalModel global(initial_theta(s), oc, fragments);
    auto islands = make_islands(s, std::vector<int>(s.islands, steps), codec);
    for (auto& w : islands) w->set_params(global.theta());
    const diloco::StreamingMerge rule = s.merge;
    struct Pending {
        int fragment, apply_at;
        std::vector<std::byte> update;
        std::vector<std::vector<float>> sent;  // carry merge: each island's fragment when it sent its Δ
    };
    std::vector<Pending> pending;
    std::vector<float> full(global.theta().size());
    std::vector<double> tokens(s.islands, 0);
    row.wall_s = steps * s.link.step_s;
    // hidden: the island trains τ steps while the sync runs (not after the run's last step).
    auto sync = [&](int p, int apply_at, bool hidden) {
        const diloco::Fragment& f = global.fragment(p);
        std::vector<float> mine(f.size), theirs(f.size);
        global.fragment_theta(p, theirs);
        std::vector<std::vector<float>> deltas, sent;
        double up = 0;
        for (int i = 0; i < s.islands; ++i) {
            islands[i]->get_params(full);
            diloco::gather(f, full, mine);
            if (rule == diloco::StreamingMerge::carry) sent.push_back(mine);
            for (std::size_t k = 0; k < f.size; ++k) mine[k] = theirs[k] - mine[k];
            const std::vector<std::byte> payload = islands[i]->encode(mine, static_cast<uint64_t>(p));
            deltas.push_back(compression::decode(payload, f.size));
            up = std::max(up, static_cast<double>(payload.size()));
            row.bytes += static_cast<double>(payload.size());
        }
        std::vector<outer::WeightedDelta> cs;
        for (const auto& d : deltas) cs.push_back({d, 1.0});  // equal steps: equal weights
        std::vector<std::byte> update = global.make_update(cs, p);
        const double down = static_cast<double>(update.size());
        row.bytes += down * s.islands;
        row.peak_bytes_per_sync = std::max(row.peak_bytes_per_sync, up + down);
        // The transfer runs while the island trains τ steps; what is left of it stalls the island.
        const double share = static_cast<double>(f.size) / static_cast<double>(global.theta().size());
        row.wall_s += std::max(0.0, s.link.sync_s(up, down, share) - (hidden ? s.tau * s.link.step_s : 0.0));
        pending.push_back({p, apply_at, std::move(update), std::move(sent)});
    };
    auto apply_due = [&](int step) {
        for (auto it = pending.begin(); it != pending.end();) {
            if (it->apply_at > step) {
                ++it;
                continue;
            }
            global.apply_update(it->update, it->fragment);
            const diloco::Fragment& f = global.fragment(it->fragment);
            std::vector<float> mine(f.size), theirs(f.size);
            global.fragment_theta(it->fragment, theirs);
            for (std::size_t i = 0; i < islands.size(); ++i) {
                auto& w = islands[i];
                w->get_params(full);
                diloco::gather(f, full, mine);
                diloco::merge_fragment(rule, s.alpha, mine, theirs,
                                       it->sent.empty() ? std::span<const float>() : std::span<const float>(it->sent[i]));
                diloco::scatter(f, mine, full);
                w->set_params(full);
            }
            it = pending.erase(it);
        }
    };
    for (int step = 1; step <= steps; ++step) {
        double loss = 0;
        for (int i = 0; i < s.islands; ++i) {
            const RoundResult r = islands[i]->run_steps(1);
            tokens[i] += r.tokens;
            loss += r.mean_loss / s.islands;
        }
        apply_due(step);
        for (int p = 0; p < P; ++p)
            if (diloco::fragment_due(step, p, s.H, P)) sync(p, step + s.tau, step < steps);
        if (step % s.H == 0)
            std::fprintf(stderr, "  %s: step %d/%d inner loss %.3f, %.1f MB so far\n", name.c_str(), step, steps, loss,
                         row.bytes / 1e6);
    }
    apply_due(steps + s.tau);  // updates still on the wire arrive
    for (int p = 0; p < P; ++p)  // the progress since each fragment's last sync
        if (!diloco::fragment_due(steps, p, s.H, P)) {
            sync(p, 0, false);
            apply_due(steps + s.tau);
        }
    finish_islands_row(s, row, global.theta(), tokens, steps, t0);
    row.rounds = s.rounds * P;
    return row;
}

namespace {
// What the codec makes of a Δ of the model's shape (Gaussian values), in bytes: an -auto row's guess of
// its first sync, before it has sent anything.
double guessed_payload_bytes(const Setup& s, const std::string& codec) {
    std::vector<float> guess(ParamLayout(s.model).num_params());
    Rng rng(7);
    fill_normal(rng, guess.data(), guess.size(), 1e-3f);
    return static_cast<double>(compression::make_codec(codec)->encode(guess).size());
}
}  // namespace

// Streaming DiLoCo with H and τ from the link: a fragment's sync (its share of the bytes and of the
// host's work) as the codec's size of a Gaussian Δ of the model's shape says; τ the steps that hide it
// at the target share (rounds::auto_steps_per_round, overlapped); H the fewest steps that leave room
// for τ < H / P among those that cut the run's steps into whole rounds.
Row run_streaming_auto(const Setup& s, const std::string& name, const std::string& codec) {
    const double P = s.fragments, bytes = guessed_payload_bytes(s, codec) / P;
    const double fragment_sync = s.link.sync_s(bytes, bytes, 1 / P);
    const rounds::AutoSteps tau_bounds{.target = s.auto_steps.target, .min_steps = 1, .max_steps = s.auto_steps.max_steps};
    const int tau = static_cast<int>(rounds::auto_steps_per_round(tau_bounds, s.link.step_s, fragment_sync, true));
    const int total = s.rounds * s.H;
    const int wanted = std::clamp(s.fragments * (tau + 1), static_cast<int>(s.auto_steps.min_steps), static_cast<int>(s.auto_steps.max_steps));
    int rounds = 1;  // the most whole rounds of at least `wanted` steps
    for (int r = total / std::max(wanted, 1); r >= 1; --r)
        if (total % r == 0) {
            rounds = r;
            break;
        }
    Setup t = s;
    t.rounds = rounds;
    t.H = total / rounds;
    t.tau = std::min(tau, t.H / s.fragments - 1);
    std::fprintf(stderr, "  %s: a fragment's sync %.1f s, so tau %d steps and H %d (%d rounds)\n", name.c_str(), fragment_sync,
                 t.tau, t.H, t.rounds);
    return run_streaming(t, name, codec);
}

// Overlapped DiLoCo (docs/rounds.md, "Overlapped rounds and H from the link"), as the daemons run it. An
// island sends round t's Δ and trains round t + 1 at once from where it is: its own progress stands in
// for the update it has not received (the eager proxy, with the outer lr of 1). Round t's update is
// folded in as it lands on the bench's clock, between two steps, carrying the round's progress onto it:
// θ_i = θ_{t+1} + (θ_i − θ_i at the round's start). It lands ⌈sync / step⌉ steps into the round, at
// most H − 1 (the island then waits for it, and trains one step after it). So every Δ is the round's
// own progress, taken against the θ the host holds, and the host's outer step is sync DiLoCo's.
// whole_round_late: fold every update in at the end of the next round instead, the worst case (the
// daemons' when a sync outlasts a round). The clock: a round takes max(H · step, the last sync + a
// step), and the run ends when the last update is back. The row's `stale` is the steps each update
// came late (mean/max).
Row run_overlap(const Setup& s, const std::string& name, const std::string& codec, bool auto_h, bool whole_round_late) {
    const double t0 = now_s();
    Row row;
    row.name = name;
    const int total = s.rounds * s.H;
    OuterConfig oc = s.outer;
    oc.down_codec = codec;
    oc.total_updates = static_cast<uint64_t>(s.rounds);  // auto_h: the outer lr schedule still spans --rounds
    GlobalModel global(initial_theta(s), oc);
    auto islands = make_islands(s, std::vector<int>(s.islands, total), codec);
    const std::size_t n = global.theta().size();
    std::vector<std::vector<float>> start(s.islands, std::vector<float>(global.theta().begin(), global.theta().end()));
    for (auto& w : islands) w->set_params(global.theta());
    std::vector<float> mine(n);
    std::vector<double> tokens(s.islands, 0);
    std::optional<std::vector<std::byte>> on_its_way;  // the last round's update
    const double slowest = *std::ranges::min_element(s.speeds);
    double sent_at = 0, sent_at_hetero = 0, last_sync = 0;  // the clock: the last send, and that sync's seconds
    double late_sum = 0;
    int late_max = 0, late_count = 0;
    int H = s.H;
    if (auto_h) {  // the first round's sync from the codec's size of a Δ
        const double bytes = guessed_payload_bytes(s, codec);
        H = static_cast<int>(rounds::auto_steps_per_round(s.auto_steps, s.link.step_s, s.link.sync_s(bytes, bytes), true));
    }
    // Every island trains `steps` steps of the round; the round's weights and mean loss add up.
    std::vector<double> weights(s.islands);
    double loss = 0;
    auto train = [&](int steps) {
        for (int i = 0; steps > 0 && i < s.islands; ++i) {
            const RoundResult res = islands[i]->run_steps(steps);
            tokens[i] += res.tokens;
            weights[i] += res.tokens;
            loss += res.mean_loss * steps / s.islands;
        }
    };
    for (int done = 0, r = 0; done < total; ++r) {
        H = std::min(H, total - done);
        if (auto_h && total - done - H < H / 2) H = total - done;  // no short last round paying a whole sync
        std::ranges::fill(weights, 0.0);
        loss = 0;
        double up = 0;
        const double landing = std::ceil(last_sync / s.link.step_s - 1e-9);  // steps into the round
        const int late = !on_its_way ? H : whole_round_late ? H : static_cast<int>(std::min<double>(H - 1, landing));
        train(late);
        if (on_its_way) {  // the last round's update lands: the host's θ now, the round's progress carried onto it
            global.apply_update(*on_its_way);
            on_its_way.reset();
            late_sum += late;
            late_max = std::max(late_max, late);
            ++late_count;
            const std::span<const float> theta = global.theta();
            for (int i = 0; i < s.islands; ++i) {
                islands[i]->get_params(mine);
                for (std::size_t k = 0; k < n; ++k) mine[k] = theta[k] - (start[i][k] - mine[k]);
                islands[i]->set_params(mine);
                std::copy(theta.begin(), theta.end(), start[i].begin());
            }
        }
        train(H - late);
        loss /= H;
        std::vector<std::vector<float>> deltas;
        for (int i = 0; i < s.islands; ++i) {
            islands[i]->get_params(mine);
            std::vector<float> delta(n);
            for (std::size_t k = 0; k < n; ++k) delta[k] = start[i][k] - mine[k];  // the round's progress
            if (s.overlap_proxy_scale != 1.0f) {  // the next round starts from start − scale × the progress
                for (std::size_t k = 0; k < n; ++k) mine[k] = start[i][k] - s.overlap_proxy_scale * delta[k];
                islands[i]->set_params(mine);
            }
            start[i] = mine;  // the next round starts here
            const std::vector<std::byte> payload = islands[i]->encode(delta, 0);
            deltas.push_back(compression::decode(payload, n));
            up = std::max(up, static_cast<double>(payload.size()));
            row.bytes += static_cast<double>(payload.size());
        }
        std::vector<outer::WeightedDelta> cs;
        for (int i = 0; i < s.islands; ++i) cs.push_back({deltas[i], weights[i]});
        on_its_way = global.make_update(cs);
        double down = static_cast<double>(on_its_way->size());
        row.bytes += down * s.islands;
        if (s.desloc > 0 && (r + 1) % s.desloc == 0) sync_adamw_moments(islands, weights, s.moments_fp32, up, down, row);
        row.peak_bytes_per_sync = std::max(row.peak_bytes_per_sync, up + down);
        const double compute = H * s.link.step_s;
        const double waited = r == 0 ? 0 : last_sync + (whole_round_late ? 0 : s.link.step_s);  // the update, then a step
        sent_at += std::max(compute, waited);
        sent_at_hetero += std::max(compute / slowest, r == 0 ? 0 : last_sync + (whole_round_late ? 0 : s.link.step_s / slowest));
        last_sync = s.link.sync_s(up, down);
        done += H;
        row.rounds = r + 1;
        std::fprintf(stderr,
                     "  %s: round %d, H %d (%d/%d steps), the last update %d steps late, inner loss %.3f, sync %.1f s against "
                     "%.1f s of compute, %.1f MB so far\n",
                     name.c_str(), r + 1, H, done, total, r == 0 ? 0 : late, loss, last_sync, compute, row.bytes / 1e6);
        if (auto_h) H = static_cast<int>(rounds::auto_steps_per_round(s.auto_steps, s.link.step_s, last_sync, true));
    }
    global.apply_update(*on_its_way);
    row.wall_s = sent_at + last_sync;
    row.wall_s_hetero = sent_at_hetero + last_sync;
    if (late_count > 0) {
        row.staleness_mean = late_sum / late_count;
        row.staleness_max = late_max;
    }
    finish_islands_row(s, row, global.theta(), tokens, total, t0);
    return row;
}

// Asynchronous DiLoCo on an event-driven clock: island i runs at speed v_i (steps of step_s / v_i),
// takes H_i = Dynamic Local Updates steps a round, and starts each round from the θ it last received.
// The host applies each pseudo-gradient on arrival (Delayed Nesterov, period = islands), after the
// staleness rule; the update reaches every island (a receive) before the sender starts again.
// Islands start rounds until the token budget of the other rows is spent.
Row run_async(const Setup& s, const std::string& name, const std::string& codec) {
    const double t0 = now_s();
    Row row;
    row.name = name;
    const int n = s.islands;
    const double vmax = *std::ranges::max_element(s.speeds);
    std::vector<int> H(n);
    for (int i = 0; i < n; ++i) H[i] = static_cast<int>(rounds::local_steps(static_cast<uint32_t>(s.H), s.speeds[i], vmax));
    const rounds::StalenessRule rule{static_cast<uint64_t>(s.max_staleness), s.stale};
    const double budget = static_cast<double>(s.rounds) * s.H * n * tokens_per_step(s);
    const std::size_t num_params = ParamLayout(s.model).num_params();
    const double up_bytes = static_cast<double>(compression::make_codec(codec)->encode(std::vector<float>(num_params, 0.0f)).size());
    const double down_bytes = up_bytes;

    // The clock first, without training: event order, staleness and each island's number of rounds
    // depend only on speeds and sizes (async sends fp32, so its sizes are fixed), so every island's
    // inner lr schedule can span exactly its own steps.
    struct Event {
        int island;
        uint64_t started_at_version;
    };
    std::vector<Event> order;
    std::vector<int> rounds_of(n, 0);
    {
        using Arrival = std::pair<double, int>;  // (time its Δ reaches the host, island)
        std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> q;
        std::vector<uint64_t> version(n, 0);
        uint64_t applied = 0;
        double started = 0;
        auto start = [&](int i, double at) {
            if (started + H[i] * tokens_per_step(s) > budget + 1e-6) return;
            started += H[i] * tokens_per_step(s);
            ++rounds_of[i];
            version[i] = applied;
            q.push({at + H[i] * s.link.step_s / s.speeds[i] + s.link.send_s(up_bytes), i});
        };
        for (int i = 0; i < n; ++i) start(i, 0);
        while (!q.empty()) {
            const auto [at, i] = q.top();
            q.pop();
            order.push_back({i, version[i]});
            const uint64_t staleness = applied - version[i];
            if (!rounds::judge_staleness(staleness, rule).refused) ++applied;
            row.wall_s = at + s.link.sync_overhead_s + s.link.receive_s(down_bytes);
            start(i, row.wall_s);
        }
    }
    OuterConfig oc = s.outer;
    oc.optimizer = diloco::OuterOptimizerKind::delayed_nesterov;
    oc.period = static_cast<uint32_t>(n);
    oc.down_codec = codec;
    oc.total_updates = order.size();
    GlobalModel global(initial_theta(s), oc);
    std::vector<int> total_steps(n);
    for (int i = 0; i < n; ++i) total_steps[i] = rounds_of[i] * H[i];
    auto islands = make_islands(s, total_steps, codec);
    std::vector<std::vector<float>> start_theta(n, std::vector<float>(global.theta().begin(), global.theta().end()));
    std::vector<double> tokens(n, 0);
    double staleness_sum = 0;
    row.staleness_max = 0;
    for (std::size_t e = 0; e < order.size(); ++e) {
        const int i = order[e].island;
        const RoundResult res = islands[i]->run_round(start_theta[i], H[i]);
        tokens[i] += res.tokens;
        row.bytes += static_cast<double>(res.payload.size());
        const uint64_t staleness = global.updates_applied() - order[e].started_at_version;
        staleness_sum += static_cast<double>(staleness);
        row.staleness_max = std::max(row.staleness_max, static_cast<double>(staleness));
        const rounds::StaleVerdict verdict = rounds::judge_staleness(staleness, rule);  // the host's own rule
        if (!verdict.refused) {
            std::vector<float> delta = compression::decode(res.payload, global.theta().size());
            if (verdict.scale != 1.0f)
                for (float& x : delta) x *= verdict.scale;
            const outer::WeightedDelta c{delta, res.tokens};
            const std::vector<std::byte> update = global.make_update(std::span(&c, 1));
            global.apply_update(update);
            row.bytes += static_cast<double>(update.size()) * n;
            row.peak_bytes_per_sync = std::max(row.peak_bytes_per_sync, static_cast<double>(res.payload.size() + update.size()));
        } else {
            ++row.refused;
        }
        start_theta[i].assign(global.theta().begin(), global.theta().end());
        if ((e + 1) % n == 0)
            std::fprintf(stderr, "  %s: update %zu/%zu (island %d, staleness %llu) inner loss %.3f\n", name.c_str(), e + 1,
                         order.size(), i, static_cast<unsigned long long>(staleness), res.mean_loss);
    }
    finish_islands_row(s, row, global.theta(), tokens, *std::ranges::max_element(total_steps), t0);
    row.staleness_mean = order.empty() ? 0 : staleness_sum / static_cast<double>(order.size());
    row.rounds = static_cast<int>(order.size()) - row.refused;
    return row;
}

Row read_single_curve(const std::string& path, const std::string& settings_line) {
    // The clock (step time, link, traffic scale) changes no val loss: only what comes before it must match.
    const std::string settings = settings_line.substr(0, settings_line.find("; clock:"));
    std::ifstream in(path);
    if (!in) throw Error("cannot read the one-island curve '" + path + "'");
    Row row;
    row.name = "single";
    bool same = false;
    for (std::string line; std::getline(in, line);) {
        same = same || line.rfind(settings, 0) == 0;
        int step = 0, steps = 0;
        float loss = 0;
        if (std::sscanf(line.c_str(), "  single: step %d/%d val loss %f", &step, &steps, &loss) == 3)
            row.curve.emplace_back(step, loss);
    }
    if (!same) throw Error("'" + path + "' is not from a run with these settings (" + settings + ")");
    if (row.curve.size() < 2) throw Error("'" + path + "' holds no one-island curve");
    return row;
}

void set_speedup(Row& row, const Row& single, double step_s) {
    if (single.curve.empty() || row.steps_per_island <= 0) return;
    const auto& c = single.curve;
    double steps = static_cast<double>(c.back().first);
    row.speedup_capped = true;
    for (std::size_t k = 1; k < c.size(); ++k) {
        if (c[k].second > row.val_loss) continue;
        // Linear between the last point above the row's loss and the first at or below it.
        const double f = (c[k - 1].second - row.val_loss) / std::max(1e-9, static_cast<double>(c[k - 1].second - c[k].second));
        steps = c[k - 1].first + std::clamp(f, 0.0, 1.0) * (c[k].first - c[k - 1].first);
        row.speedup_capped = false;
        break;
    }
    row.speedup = steps / row.steps_per_island;
    if (row.wall_s > 0) row.wall_speedup = steps * step_s / row.wall_s;
}

}  // namespace arch::bench
