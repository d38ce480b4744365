// gui/run_toml.h: what the "Host a run" wizard asks for, and the run.toml text it becomes
// (keys as in docs/run-config.md). Pure: no widgets, no files; the wizard writes the file.
// checkpoint_dir is the run folder, absolute, so the daemon and `archipelago invite` agree on it.
#pragma once

#include <QString>

namespace arch::gui {

struct HostRunSettings {
    QString name = "my-run";
    QString preset = "tiny";       // a GPT-2 or Llama preset (core/gpt2_family.cpp, core/llama_family.cpp)
    QString init_hf;               // a Hugging Face folder on the host's disk to start from; empty: none
    QString train_data, val_data;  // llm.c shard patterns; both empty: the bundled corpus
    int rounds = 20;
    int steps_per_round = 50;  // H
    int islands = 2;
    QString mode = "sync";  // sync | async | streaming | overlap
    QString codec = "int8:block=256+zstd:1";
    QString bind = "tcp://0.0.0.0:5555";
    QString nat = "auto";  // run.nat: auto | upnp | natpmp | off
    QString run_dir;  // absolute; becomes run.checkpoint_dir
};

// The codecs the wizard offers: (label, spec) pairs, fp32 first.
struct CodecChoice {
    const char* label;
    const char* spec;
};
inline constexpr CodecChoice kCodecChoices[] = {
    {"fp32 (no compression)", "fp32"},
    {"int8 + zstd (about 4x smaller)", "int8:block=256+zstd:1"},
    {"fp4 + error feedback + zstd (about 8x smaller)", "fp4+ef+zstd"},
};

QString to_run_toml(const HostRunSettings& s);

}  // namespace arch::gui
