// bench/synthetic_backend.cpp: synthetic inner steps, for bench_rounds only (bench_rounds_peer links
// it; `archipelago` never does). It installs itself as the program's GPU backend, so a peer run with
// `--device cuda` trains a SyntheticModel: no engine, no activations, no gradients and no optimizer
// state, only θ_i (P), and each inner step moves every value of θ_i by lr times a pseudo-random amount
// in [-1, 1], about what an AdamW step moves it, at memory speed (a GPU's step takes no CPU from the
// work measured). A round's Δ is then as large and as dense as a real one, so the host, the net, the
// codecs and the peer's DiLoCo code (all real) do a real round's work at sizes whose engine would not
// fit this machine. It says what it is in every log line that names the device.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/param_layout.h"
#include "core/transformer.h"
#include "peers/diloco/gpu_backend.h"

namespace arch::bench {
namespace {

class SyntheticModel final : public Model {
public:
    explicit SyntheticModel(const ModelConfig& config) : config_(config), params_(ParamLayout(config).num_params()) {}

    const ModelConfig& config() const override { return config_; }
    std::size_t num_params() const override { return params_.size(); }
    std::string device_name() const override { return "synthetic inner steps (bench_rounds only, no engine)"; }
    void init_weights(uint64_t seed) override { params_ = init_params(config_, seed); }
    void set_params(std::span<const float> host) override {
        if (host.size() != params_.size()) throw Error("synthetic model: wrong parameter count");
        std::memcpy(params_.data(), host.data(), host.size_bytes());
    }
    void get_params(std::span<float> host) override { std::memcpy(host.data(), params_.data(), params_.size() * sizeof(float)); }
    // Its moments are zeros it does not hold (as a GPU's are on the GPU): read and written a slice
    // at a time like any engine's, so a DES-LOC round costs the peer what it costs beside a real one.
    bool read_slice(StateVector which, std::size_t offset, std::span<float> out) override {
        if (offset > params_.size() || out.size() > params_.size() - offset) throw Error("synthetic model: slice past the end");
        if (which == StateVector::params)
            std::memcpy(out.data(), params_.data() + offset, out.size_bytes());
        else
            std::fill(out.begin(), out.end(), 0.0f);
        return true;
    }
    bool write_moments_slice(std::size_t offset, std::span<const float> m, std::span<const float>) override {
        if (offset > params_.size() || m.size() > params_.size() - offset) throw Error("synthetic model: slice past the end");
        return true;
    }
    void get_grads(std::span<float> host) override { std::fill(host.begin(), host.end(), 0.0f); }
    float forward(const int*, const int*, int, int) override { return loss_; }
    void backward(float) override {}
    void zero_grad() override {}
    std::vector<float> logits_at(int, int) const override { return std::vector<float>(config_.vocab_size, 0.0f); }
    float adamw_step(float lr, const AdamWConfig&) override {
        // xorshift32 in 16 interleaved lanes, seeded by the step: cheap (a loop the compiler
        // vectorizes, at memory speed), dense, and different every step. The step stands in for a
        // GPU's, which takes no CPU from the DiLoCo work the bench measures.
        constexpr std::size_t kLanes = 16;
        const auto step = static_cast<uint32_t>(++steps_);
        uint32_t lane[kLanes];
        for (std::size_t j = 0; j < kLanes; ++j) lane[j] = (0x9e3779b9u * (step * kLanes + j)) | 1u;  // never 0
        float* x = params_.data();
        const std::size_t n = params_.size();
        const auto move = [lr](uint32_t& s, float& v) {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            v += lr * (static_cast<float>(static_cast<int32_t>(s >> 8)) * (2.0f / 16777216.0f) - 1.0f);
        };
        std::size_t i = 0;
        for (; i + kLanes <= n; i += kLanes)
#pragma omp simd
            for (std::size_t j = 0; j < kLanes; ++j) move(lane[j], x[i + j]);
        for (std::size_t j = 0; i < n; ++i, ++j) move(lane[j], x[i]);
        loss_ *= 0.999f;
        return 1.0f;
    }
    int adamw_steps() const override { return steps_; }
    void get_adamw_state(std::span<float> m, std::span<float> v) const override {
        std::fill(m.begin(), m.end(), 0.0f);
        std::fill(v.begin(), v.end(), 0.0f);
    }
    void set_adamw_state(std::span<const float>, std::span<const float>, int steps) override { steps_ = steps; }
    DeviceMemory memory() const override {
        DeviceMemory m;
        m.params_bytes = params_.size() * sizeof(float);
        return m;
    }

private:
    ModelConfig config_;
    std::vector<float> params_;
    int steps_ = 0;
    float loss_ = 10.0f;
};

class SyntheticBackend final : public diloco::GpuBackend {
public:
    std::unique_ptr<Model> make_model(const ModelConfig& config, int, const diloco::DeviceOptions&) const override {
        return std::make_unique<SyntheticModel>(config);
    }
    std::unique_ptr<Island> make_island(const ModelConfig&, const TrainConfig&, const std::vector<int>&, Parallel,
                                        const diloco::DeviceOptions&) const override {
        throw Error("synthetic inner steps: one device an island");
    }
    std::optional<std::vector<std::byte>> encode_delta(Model&, std::span<const float>, const std::string&) const override {
        return std::nullopt;  // Δ encoded on the host, by the peer's own code
    }
    std::optional<std::vector<std::byte>> encode_delta(Island&, std::span<const float>, const std::string&) const override {
        return std::nullopt;
    }
    std::vector<std::string> describe() const override {
        return {"synthetic inner steps (bench_rounds only): no engine; each step perturbs θ"};
    }
};

const SyntheticBackend kBackend;
[[maybe_unused]] const bool kInstalled = (diloco::install_gpu_backend(kBackend), true);

}  // namespace
}  // namespace arch::bench
