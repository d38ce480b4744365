// core/inner_loop.h: what a caller does with one island's inner training loop, whatever its devices:
// steps, validation, θ and the AdamW moments as whole vectors, save/resume; and the loop's config and
// step stats. Trainer (one device) and Island (N devices, DDP or ZeRO-3) implement it; the CLI and the
// DiLoCo worker hold only this. The parts only one kind has are asked for explicitly (island(),
// single_model()), never by testing which kind it is at every call. Vectors are whole and in
// ParamLayout order (host memory, fp32).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/adamw.h"
#include "core/data_loader.h"
#include "core/muon.h"
#include "core/named_enum.h"

namespace arch {

class Island;
class Model;

// The inner optimizer: AdamW, or Muon for the blocks' matmul weights (core/muon.h; its momentum is
// not saved) with AdamW for the rest. Named "adamw" and "muon" (run.toml's inner.optimizer).
enum class InnerOptimizer { adamw, muon };
const EnumNames<InnerOptimizer>& inner_optimizer_names();

struct TrainConfig {
    int B = 4;
    int T = 64;
    int grad_accum = 1;  // micro-batches per optimizer step
    int steps = 100;     // total optimizer steps (the schedule's length)
    LrSchedule schedule;
    AdamWConfig adamw;
    InnerOptimizer optimizer = InnerOptimizer::adamw;
    MuonConfig muon;
    uint64_t seed = 1337;
    DataOrder order = DataOrder::shuffled;
    std::string train_pattern;
    std::string val_pattern;  // empty: no validation
    int val_batches = 8;      // batches per validation, always the first ones of the val data
};

// The largest root-mean-square move one inner optimizer step can make to θ's values, in units of its
// learning rate, before weight decay, whatever the gradients:
// - AdamW: |m̂| / sqrt(v̂) ≤ (1-β1) / sqrt(1-β2) × sqrt(Σ_{j<t} (β1²/β2)^j) × sqrt(1-β2^t) / (1-β1^t)
//   (Cauchy-Schwarz on the two moving averages), its largest over t; 0 (no bound) when β1² ≥ β2;
// - Muon: 0.2 × the largest singular value Newton-Schulz leaves (the update's scale keeps its RMS at
//   0.2 of that), or AdamW's for the tensors Muon leaves to AdamW, whichever is larger.
// docs/run-config.md, "A bound that always holds".
double inner_step_rms_bound(const TrainConfig& config);
// The largest move one inner step can make to any single value of θ, in units of its learning rate,
// before weight decay: AdamW's bound above holds value by value (Cauchy-Schwarz is taken coordinate
// by coordinate); an entry of a Muon step is at most the step's largest singular value, 0.2 × σ ×
// √widest, widest being muon_widest_side of the model (core/muon.h). 0: no bound.
double inner_step_value_bound(const TrainConfig& config, int widest);
// AdamW's moments as it holds them (not bias-corrected) satisfy |m_i| ≤ k √v_i whatever the
// gradients, k = (1-β1) / sqrt((1-β2)(1 - β1²/β2)) (Cauchy-Schwarz on the two moving averages, the sum
// of the ratios' powers taken to infinity); 0 (none) when β1² ≥ β2. With gradients clipped to a
// global norm c, also ‖m‖ ≤ c and Σ v_i ≤ c².
double adamw_moment_ratio_bound(const AdamWConfig& a);

struct StepStats {
    int step = 0;  // 1-based index of the step just taken
    float loss = 0.0f;
    float lr = 0.0f;
    float grad_norm = 0.0f;
    double seconds = 0.0;
    double tokens_per_s = 0.0;
};

class InnerLoop {
public:
    virtual ~InnerLoop() = default;

    StepStats step() { return step(config().schedule.at(steps_done())); }  // at the schedule's lr
    // At a learning rate the caller chose (a DiLoCo island places its steps in the run's schedule).
    // Throws if training diverges; after a throw from an island of several devices it is unusable.
    virtual StepStats step(float lr) = 0;
    virtual float evaluate() = 0;  // mean val loss over val_batches; throws if there is no val data
    virtual bool has_val() const = 0;
    virtual int steps_done() const = 0;
    virtual const TrainConfig& config() const = 0;
    virtual std::size_t num_params() const = 0;
    virtual int devices() const = 0;

    virtual void init_weights(std::uint64_t seed) = 0;  // the family's init, as on one device
    virtual void get_params(std::span<float> full) = 0;
    // [offset, offset + out.size()) of θ_i, m or v with no copy of the whole; false where the devices
    // cannot (the caller then takes the vector whole).
    virtual bool read_slice(StateVector which, std::size_t offset, std::span<float> out) { return false; }
    virtual void set_params(std::span<const float> full) = 0;
    // The inner AdamW moments m and v. set keeps the step count: DES-LOC replaces the moments in the
    // middle of a run (peers/moment_sync.h).
    virtual void get_adamw_state(std::span<float> m, std::span<float> v) = 0;
    virtual void set_adamw_state(std::span<const float> m, std::span<const float> v) = 0;
    // m and v at [offset, offset + m.size()), the step count kept; false where the devices cannot.
    virtual bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float> v) {
        return false;
    }

    // The llm.c checkpoint at path and the run state at path + ".state", the same files from every
    // kind, so runs move between one device and an island; resume validates before changing anything.
    virtual void save(const std::string& path) = 0;
    virtual void resume(const std::string& path) = 0;

    // The island's per-device parts (memory, traffic, shards); null on one device.
    virtual Island* island() { return nullptr; }
    // The model a one-device loop trains (to sample from, or to encode Δ on its GPU); null for an island.
    virtual Model* single_model() { return nullptr; }
};

}  // namespace arch
