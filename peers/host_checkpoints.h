// peers/host_checkpoints.h: the host's checkpoints (docs/protocol.md, "Failures"): when one is due
// (run.checkpoint_every updates, run.checkpoint_minutes, every change of the island map, the run's
// end or a stop), the snapshot it is written from, and reading the last one back when a host restarts
// on the folder. host.state holds the round, the key -> island map and the global state (θ and the
// outer optimizer's) with an XXH3-128 checksum, written atomically beside model.bin (core/checkpoint.h:
// llm.c's format for GPT-2, safetensors for the Llama family). The write is the background writer's
// (peers/checkpoint_writer.h); the outer state, which the next outer step changes, is staged into the
// file from where it lies a bounded amount a turn of the event loop (peers/staged_write.h), and
// finished before that step (before_step). A full disk or a read-only folder is logged and the run
// goes on: the next checkpoint tries again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/model_config.h"
#include "peers/checkpoint_writer.h"
#include "peers/diloco/global_model.h"
#include "peers/run_config.h"
#include "peers/run_events.h"
#include "peers/staged_write.h"

namespace arch {

class HostCheckpoints {
public:
    // What a checkpoint holds, asked for only when one is taken: the round, the island map, θ (where
    // it lies: GlobalModel::theta_snapshot) and the model whose outer state is written where it lies.
    struct Source {
        uint64_t round = 0;
        std::map<std::string, uint32_t> islands;
        std::shared_ptr<const FloatStore> theta;
        const diloco::GlobalModel* global = nullptr;
        std::vector<double> screen_history;  // the norms outer.screen remembers (HostDeltas)
    };
    using SourceFn = std::function<Source()>;
    struct Loaded {
        uint64_t round = 0;
        std::map<std::string, uint32_t> islands;
        std::vector<double> screen_history;  // none from a version 1 or 2 file
    };

    // Creates the folder and starts the writer. `source` is asked what a checkpoint holds whenever
    // one is taken; log gets one line per checkpoint written or refused.
    HostCheckpoints(const RunConfig& config, const ModelConfig& model, const Clock& clock, SourceFn source,
                    std::function<void(const std::string&)> log, std::function<void(const RunEvent&)> event);
    // The folder's checkpoint loaded into `global`: its round and island map; none when the folder has
    // none. Throws arch::Error for a file that is not a host checkpoint or is corrupt.
    std::optional<Loaded> load(diloco::GlobalModel& global) const;

    void island_map_changed() { wanted_ = true; }
    void updated();  // an update was applied: one is wanted when the cadence says so
    void pump();  // a turn of the event loop: logs finished writes, advances or starts one
    bool staging() const { return staging_ != nullptr; }  // an outer state is being staged: pump() has work
    void before_step();                 // the outer step is about to move the momentum: staging finishes now
    void at_end() { wanted_ = wanted_ || updates_since_ > 0; }  // the last one is wanted while the run drains
    void finish();  // the run's end or a stop: whatever is newer, written on this thread

private:
    bool take_snapshot();  // false (and logged) when the disk refused it
    void fill_snapshot(CheckpointSnapshot& s, const Source& source);
    // True once the outer state is all in the file with its checksum (the writer may start); false
    // while some is left, or when the disk refused it (logged, the snapshot dropped).
    bool advance_staging(std::size_t budget);
    void drop_snapshot(uint64_t round, const std::string& why);
    void log_result(const CheckpointWriter::Result& r) const;

    static constexpr std::size_t kStageBytes = 4u << 20;
    const RunConfig& config_;
    const Clock& clock_;
    SourceFn source_;
    std::function<void(const std::string&)> log_;
    std::function<void(const RunEvent&)> event_;  // checkpoint_written / checkpoint_failed
    std::unique_ptr<CheckpointWriter> writer_;
    bool wanted_ = false;  // a snapshot is due and not taken yet
    uint64_t updates_since_ = 0;
    Clock::time_point last_{};  // the last snapshot taken
    struct Staging {
        diloco::Checksum sum;  // of host.state's bytes in order, up to where the staged write is
        std::unique_ptr<StagedWrite> write;
    };
    std::unique_ptr<Staging> staging_;  // a snapshot whose outer state is still being written
};

}  // namespace arch
