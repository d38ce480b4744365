// peers/global_eval.h: the host's validation loss of the global θ (the round row's val_loss), on a
// thread of its own so that an evaluation never holds up a round. The run's model on the CPU backend
// reads θ where it lies in a snapshot (GlobalModel::theta_snapshot: copied on write, so it costs no
// memory unless θ changes while the evaluation is under way), with no copy of the parameters and no
// gradients, over the first run.val_batches batches of the validation split. One evaluation at a time:
// the host starts one on the newest θ whenever none is under way (its own cadence). The thread runs at
// the host's own priority, so that an evaluation that fits in a round ends within it: at the lowest,
// on a machine whose cores the rounds keep busy, it was still under way when the next update came, and
// θ was copied every round. Results come back to the host's own thread (take_result).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/backend.h"
#include "core/float_store.h"
#include "core/model_config.h"
#include "core/param_store.h"
#include "core/transformer.h"
#include "peers/run_config.h"

namespace arch {

class GlobalEval {
public:
    struct Result {
        uint64_t round = 0;  // θ after this round's update, or kStart
        float loss = -1;
        double seconds = 0;
        std::string error;  // empty: measured
    };
    static constexpr uint64_t kStart = UINT64_MAX;  // the θ a host starts from, before its first update
    // `val_pattern`: the validation shards ("" for none: nothing is ever evaluated). `config` outlives this.
    GlobalEval(const RunConfig& config, const ModelConfig& model, std::string val_pattern);
    ~GlobalEval();  // an evaluation under way stops after its current batch
    GlobalEval(const GlobalEval&) = delete;
    GlobalEval& operator=(const GlobalEval&) = delete;

    bool enabled() const { return !val_pattern_.empty(); }
    bool busy() const;
    // Evaluates `theta` (θ after round `round`'s update, or kStart's) in the background. False, starting nothing, while an
    // evaluation is under way or the run has no validation split.
    bool start(uint64_t round, std::shared_ptr<const FloatStore> theta);
    void wait();                          // until no evaluation is under way
    std::optional<Result> take_result();  // a finished evaluation, once

private:
    Result evaluate();
    void loop();

    const RunConfig& config_;
    std::string val_pattern_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<ViewParamStore> params_;  // θ, in place
    std::unique_ptr<Transformer> model_;
    std::shared_ptr<const FloatStore> theta_;  // held while evaluated
    uint64_t round_ = 0;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool requested_ = false, busy_ = false, quit_ = false;
    std::optional<Result> result_;
    std::thread thread_;  // last: started once the rest is built
};

}  // namespace arch
