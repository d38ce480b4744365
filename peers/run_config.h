// peers/run_config.h: everything a DiLoCo run needs to agree on, read from run.toml by the host and
// sent to each peer as text in its welcome, so every island trains the same model the same way.
// Validation names the key and the problem; docs/run-config.md lists every key with its default.
#pragma once

#include <string>
#include <vector>

#include "core/data_manifest.h"
#include "core/model_config.h"
#include "core/named_enum.h"
#include "core/trainer.h"
#include "net/port_mapping.h"
#include "peers/diloco/global_model.h"
#include "peers/diloco/streaming_merge.h"
#include "peers/rounds/auto_steps.h"
#include "peers/rounds/staleness.h"
#include "privacy/privacy_budget.h"

namespace arch {

// run.mode: the round policy (peers/rounds/, docs/rounds.md). Parsed once; the name is for messages.
enum class RunMode { sync, async, streaming, overlap };
const EnumNames<RunMode>& run_mode_names();  // "sync", "async", "streaming", "overlap"
const char* mode_name(RunMode mode);

struct RunConfig {
    // [run]
    std::string name = "archipelago";
    int rounds = 10;
    int islands = 3;             // islands expected; round 0 starts when they have all joined
    RunMode mode = RunMode::sync;
    std::string bind = "tcp://127.0.0.1:5555";
    // Port mapping on the host's router at start (net/port_mapping.h, docs/net.md "Hosting from home"):
    // auto tries UPnP IGD, then NAT-PMP, and goes on without a mapping; upnp or natpmp insist (the
    // host exits when the mapping fails). Never tried for a bind on loopback.
    net::NatMode nat = net::NatMode::automatic;
    std::string checkpoint_dir = "runs/host";
    // Checkpoints are written in the background (peers/checkpoint_writer.h), after every this many
    // updates, or once this many minutes have passed (0: no time cadence), and at the run's end.
    int checkpoint_every = 1;
    double checkpoint_minutes = 0;
    uint64_t seed = 1337;
    // [model]
    std::string preset = "tiny";
    int layers = 0, channels = 0, heads = 0, max_seq_len = 0, vocab = 0;  // 0: the preset's / the tokenizer's
    // Llama-family presets only (refused for GPT-2's): 0 / unset keeps the preset's.
    int kv_heads = 0, ffn_hidden = 0;
    float rope_theta = 0.0f;
    int tied = -1;  // -1: the preset's; 0 untied; 1 tied
    // A warm start: an llm.c checkpoint on the host's disk that round 0 starts from instead of the
    // seed's random init (the DiLoCo paper starts from a pretrained model). Peers never open it: θ
    // reaches them in the state, as always.
    std::string init;
    std::string init_hf;  // the same from a Hugging Face model folder on the host's disk (core/hf_import.h)
    // [data]
    std::string train_data;  // the host's shards (a glob); empty: the bundled corpus. Peers never open it.
    std::string val_data;    // the host's; only the host evaluates
    DataAssign assign = DataAssign::interleaved;  // core/data_manifest.h
    bool serve = true;       // the host sends peers the chunks they cannot find in their own --data
    // [inner]
    int steps_per_round = 50;  // H; with auto_steps, the most H (auto_h.max_steps): the unit the schedule is laid out in
    // inner.steps_per_round = "auto": each round's H from the link (peers/rounds/auto_steps.h): the
    // fewest steps that keep the slowest island busy auto_h.target of its time, within the bounds.
    bool auto_steps = false;
    rounds::AutoSteps auto_h;
    int batch = 8, seq_len = 64, grad_accum = 1;
    float lr = 2e-3f, weight_decay = 0.1f, grad_clip = 1.0f;
    int warmup = 20;
    // AdamW, or Muon (core/muon.h, one-device islands only); why AdamW is the default: docs/run-config.md.
    InnerOptimizer optimizer = InnerOptimizer::adamw;
    // [outer]
    // Outer momentum 0.5, not DiLoCo's 0.9 (tuned for H = 500): docs/run-config.md says why.
    diloco::OuterConfig outer{.momentum = 0.5f};
    // DES-LOC: every this many sync rounds each island also sends its inner AdamW m and v, and the
    // islands whose Δ the update used take their token-weighted mean (peers/moment_sync.h); 0: never.
    // Sync mode only: async and streaming refuse it, and leave it at 0 when run.toml does not set it.
    int sync_moments_every = 4;
    // [async] (peers/rounds/staleness.h)
    int max_staleness = 4;            // updates a pseudo-gradient may lag behind θ and still count in full
    rounds::StaleAction stale = rounds::StaleAction::downweight;  // what happens to one that lags more
    // [streaming] (Streaming DiLoCo, peers/diloco/fragments.h, streaming_island.h)
    int fragments = 4;    // P: the model in P strided fragments, one synced every H / P steps
    // τ 1 and the carry merge are the defaults for the reason docs/run-config.md gives.
    int tau = 1;          // inner steps an island trains on while its fragment's Δ and update travel
    float alpha = 0.5f;   // the mix merge: θ_i = α θ_i + (1 − α) θ, on the fragment, τ steps after its send
    // The merge, τ steps after the send (peers/diloco/streaming_island.h): mix (by alpha, the paper's)
    // or carry (θ plus the island's progress since the send).
    diloco::StreamingMerge merge = diloco::StreamingMerge::carry;
    // [overlap] (peers/diloco/overlap_island.h): an island goes on with its next round from
    // θ_t + proxy_scale × (θ_i − θ_t) at its send, its own progress scaled down standing in for the
    // update in flight. 0.85, not 1: docs/run-config.md says why.
    float overlap_proxy_scale = 0.85f;
    // [wire]
    std::string codec = "int8:block=256+zstd:1";  // uplink (pseudo-gradients)
    // [deadlines]
    double join_timeout_s = 120;
    double round_timeout_s = 300;   // after the round's round_start; a pseudo-gradient still moving extends it
    double heartbeat_timeout_s = 6;
    bool fold_stragglers = false;  // deadlines.straggler: "drop" (false) | "fold" (a late pseudo-gradient joins the next round)
    int val_batches = 8;
    // [privacy] island-level differential privacy (privacy/, docs/privacy.md): off, or each Δ clipped
    // and Gaussian noise added by the host (central) or by each island before it encodes (distributed).
    privacy::DpSettings privacy;

    std::string toml;  // the text this was parsed from (what the host sends to peers)
};

RunConfig parse_run_config(const std::string& toml_text, const std::string& source_name);

// The host's rounds: one update each. run.rounds, or in streaming mode run.rounds × fragments (a round
// is then one fragment's sync, H / P inner steps: the run trains the same steps as a sync one).
uint64_t run_updates(const RunConfig& c);
int run_fragment_count(const RunConfig& c);  // P in streaming mode, else 1
// The fragments of θ for the run's model (empty: one, the whole θ), and the one a round syncs.
std::vector<diloco::Fragment> run_fragments(const RunConfig& c, const ModelConfig& model);
int round_fragment(const RunConfig& c, uint64_t round);
RunConfig load_run_config(const std::string& path);

// The model and inner training settings an island derives from the run (data patterns filled by the
// caller); vocab_from_tokenizer is used when the config leaves vocab at 0.
ModelConfig run_model_config(const RunConfig& c, int vocab_from_tokenizer);
TrainConfig run_train_config(const RunConfig& c, const std::string& train_pattern, const std::string& val_pattern,
                             uint64_t island_seed);

}  // namespace arch
