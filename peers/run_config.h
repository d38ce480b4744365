// peers/run_config.h: everything a DiLoCo run needs to agree on, read from run.toml by the host and
// sent to each peer as text in its welcome, so every island trains the same model the same way.
// Validation names the key and the problem; docs/run-config.md lists every key with its default.
#pragma once

#include <string>

#include "core/model_config.h"
#include "core/trainer.h"
#include "peers/diloco/global_model.h"

namespace arch {

struct RunConfig {
    // [run]
    std::string name = "archipelago";
    int rounds = 10;
    int islands = 3;             // islands expected; round 0 starts when they have all joined
    std::string mode = "sync";   // sync | async: the round policy (peers/rounds/, docs/rounds.md)
    std::string bind = "tcp://127.0.0.1:5555";
    std::string checkpoint_dir = "runs/host";
    uint64_t seed = 1337;
    // [model]
    std::string preset = "tiny";
    int layers = 0, channels = 0, heads = 0, max_seq_len = 0, vocab = 0;  // 0: the preset's / the tokenizer's
    // [data]
    std::string train_data;  // the host's shards (a glob); empty: the bundled corpus. Peers never open it.
    std::string val_data;    // the host's; only the host evaluates
    std::string assign = "interleaved";  // interleaved | contiguous (core/data_manifest.h)
    bool serve = true;       // the host sends peers the chunks they cannot find in their own --data
    // [inner]
    int steps_per_round = 50;  // H
    int batch = 8, seq_len = 64, grad_accum = 1;
    float lr = 2e-3f, weight_decay = 0.1f, grad_clip = 1.0f;
    int warmup = 20;
    // [outer]
    diloco::OuterConfig outer;
    // [async] (peers/rounds/staleness.h)
    int max_staleness = 4;            // updates a pseudo-gradient may lag behind θ and still count in full
    std::string stale = "downweight";  // downweight | refuse: what happens to one that lags more
    // [wire]
    std::string codec = "int8:block=256+zstd:1";  // uplink (pseudo-gradients)
    // [deadlines]
    double join_timeout_s = 120;
    double round_timeout_s = 300;   // after the round's round_start; a pseudo-gradient still moving extends it
    double heartbeat_timeout_s = 6;
    std::string straggler = "drop";  // drop | fold (a late pseudo-gradient joins the next round)
    int val_batches = 8;

    std::string toml;  // the text this was parsed from (what the host sends to peers)
};

RunConfig parse_run_config(const std::string& toml_text, const std::string& source_name);
RunConfig load_run_config(const std::string& path);

// The model and inner training settings an island derives from the run (data patterns filled by the
// caller); vocab_from_tokenizer is used when the config leaves vocab at 0.
ModelConfig run_model_config(const RunConfig& c, int vocab_from_tokenizer);
TrainConfig run_train_config(const RunConfig& c, const std::string& train_pattern, const std::string& val_pattern,
                             uint64_t island_seed);

}  // namespace arch
