// bench/convergence_runs.h: the ways bench_convergence trains the same tokens: one island, data
// parallel, DiLoCo (sync), overlapped DiLoCo, Streaming DiLoCo and asynchronous DiLoCo on an
// event-driven clock. Every
// island runs in this one process through the daemons' own GlobalModel and IslandWorker. Each run
// also reports what it would cost on a link: bytes per island per sync, and a simulated wall-clock
// from a step time and the link's rates and latency, counting only communication not overlapped.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/convergence_data.h"
#include "core/model_config.h"
#include "core/trainer.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/streaming_merge.h"
#include "peers/rounds/auto_steps.h"
#include "peers/rounds/staleness.h"

namespace arch::bench {

// One island's link to the host and its compute speed, for the simulated clock. Bytes are scaled by
// byte_scale (--model-bytes: the traffic of a bigger model with the same algorithm).
struct LinkModel {
    double step_s = 0;            // one inner step of a speed-1 island
    double up_bytes_per_s = 2.5e6, down_bytes_per_s = 12.5e6, latency_s = 0.05;
    double byte_scale = 1;
    // What a sync costs beyond the link (--sync-overhead-s): encoding, the host's decode, aggregation and
    // outer step, applying the update; bench_rounds' idle_s_per_sync measures it for a model size.
    double sync_overhead_s = 0;
    double send_s(double bytes) const { return latency_s + bytes * byte_scale / up_bytes_per_s; }
    double receive_s(double bytes) const { return latency_s + bytes * byte_scale / down_bytes_per_s; }
    // A whole sync: the Δ up, the work (share: the part of θ it moves), the update down.
    double sync_s(double up, double down, double share = 1) const {
        return send_s(up) + sync_overhead_s * share + receive_s(down);
    }
};

struct Setup {
    ModelConfig model;
    int B = 8, T = 64, H = 50, islands = 4, rounds = 40;
    float lr = 2e-3f;               // inner AdamW peak
    InnerOptimizer optimizer = InnerOptimizer::adamw;  // inner: AdamW, or Muon for the matmul weights (core/muon.h), every row
    diloco::OuterConfig outer;      // lr, momentum and the outer lr schedule of the DiLoCo rows
    std::string val;
    BenchData data;
    int val_batches = 64;           // windows drawn (seed 0) over the whole val split
    int eval_every = 100;           // the one-island run's val loss curve
    int fragments = 4, tau = 5;     // streaming: P fragments, update applied τ inner steps after sending
    float alpha = 0.5f;             // streaming merge: θ_local <- α θ_local + (1 - α) θ_global
    diloco::StreamingMerge merge = diloco::StreamingMerge::mix;  // streaming: mix (by α), or carry: θ_local <- θ_global + the progress since sending
    int desloc = 0;                 // DiLoCo rows: average the islands' AdamW m and v every this many rounds (0: never)
    bool moments_fp32 = false;      // DES-LOC's moments in fp32 (before protocol 10), not bf16
    int max_staleness = 4;          // async
    rounds::StaleAction stale = rounds::StaleAction::downweight;
    std::vector<double> speeds;     // async and the sync rows' heterogeneous clock: 1, 1, 0.5, 0.25
    LinkModel link;
    int warm_steps = 0;             // data-parallel steps on the warm shard before every row (0: none)
    double dp_clip = 1.0;           // the dp-* rows' L2 clip of a pseudo-gradient
    rounds::AutoSteps auto_steps;   // the *-auto rows: H from the link, within these bounds
    float overlap_proxy_scale = 1;  // overlap rows: the next round starts from θ_t − this × the island's own Δ (overlap.proxy_scale)
    std::vector<float> start;       // θ every row starts from: warm_start's, or empty for the seed-42 init
};

struct Row {
    std::string name;
    float val_loss = 0;
    double bytes = 0;                // every island's up + down over the run
    double peak_bytes_per_sync = 0;  // the most one island moves (up + down) in one sync
    double tokens = 0;
    double epochs = 0;               // tokens read over the tokens it could read, the most of any island
    double seconds = 0;              // real compute time of this bench
    int steps_per_island = 0;
    int rounds = 0;                  // syncs (outer updates) of the run; 0: none
    double wall_s = 0;               // simulated, islands at speed 1 (async: at its speeds)
    double wall_speedup = -1;        // the time `single` needs to reach val_loss over wall_s (-1: not measured)
    double wall_s_hetero = -1;       // sync rows: simulated with the async row's speeds (-1: not a sync row)
    double speedup = -1;             // filled in from the one-island curve (-1: not measured)
    bool speedup_capped = false;     // the curve never got as low: the speed-up is at least `speedup`
    double staleness_mean = -1, staleness_max = -1;  // async
    int refused = 0;                                 // async: pseudo-gradients refused as too stale
    std::vector<std::pair<int, float>> curve;        // one island: (step, val loss) every eval_every steps
};

// The parameters every run starts from (s.start, else the seed-42 init) and the val loss of a θ.
std::vector<float> initial_theta(const Setup& s);
// The DiLoCo paper's warm start, the same for every row (single and ddp too): warm_steps data-parallel
// steps of all the islands (their micro-batches averaged, as ddp does) from the seed-42 init, on the
// warm shard, which no row reads.
std::vector<float> warm_start(const Setup& s);
float val_loss(const Setup& s, std::span<const float> theta);
double measure_step_s(const Setup& s);  // a few B x T steps of one island, after a warm-up

Row run_single(const Setup& s, bool same_steps);
Row run_ddp(const Setup& s);
// Island-level DP on a DiLoCo row (privacy/, docs/privacy.md): the trust mode (central or distributed),
// the ε budget the run's rounds spend (δ = 1e-5, sampling rate 1: every island's Δ every round) and the
// clip. The noise multiplier is the smallest that keeps the rounds within ε; the mean is unweighted.
struct DpRow {
    std::string mode;
    double epsilon = 0, clip = 0;
};
Row run_diloco(const Setup& s, const std::string& name, const std::string& codec, const DpRow* dp = nullptr);
Row run_streaming(const Setup& s, const std::string& name, const std::string& codec);
// The same with H and τ from the link (s.auto_steps' target and bounds), the same steps in all.
Row run_streaming_auto(const Setup& s, const std::string& name, const std::string& codec);
// Overlapped DiLoCo (docs/rounds.md, "Overlapped"): round t's update is folded in as it lands on the
// bench's clock, while round t + 1 trains (at most H − 1 steps in), or with whole_round_late at the end of
// round t + 1, the worst case. auto_h: each round's H from the link (s.auto_steps), the first --H.
Row run_overlap(const Setup& s, const std::string& name, const std::string& codec, bool auto_h, bool whole_round_late = false);
Row run_async(const Setup& s, const std::string& name, const std::string& codec);

// The one-island curve from the stderr of an earlier run ("  single: step N/M val loss X" lines),
// which must hold the same settings line as this run's up to its clock (the clock changes no val
// loss); throws arch::Error otherwise.
Row read_single_curve(const std::string& path, const std::string& settings);
// The steps the one-island run needs to reach `loss` (linear between its curve's points), over
// steps_per_island; capped (at its last point) when it never gets there. wall_speedup: those steps
// at step_s, over the row's wall_s.
void set_speedup(Row& row, const Row& single, double step_s);

}  // namespace arch::bench
