// core/memory_plan.cpp: plan_memory (memory_plan.h): the buffers core/gpt2.cpp, core/llama.cpp and
// kernels/cuda/cuda_{transformer,gpt2,llama}.cpp allocate, written down as sizes, grouped the way
// core/device_memory.h reports them. When an engine's buffers change, change the matching list here
// (tests/core/test_memory_plan.cpp holds the two within 10%).
#include "core/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/model_family.h"
#include "core/param_layout.h"
#include "core/param_store.h"
#include "core/shard_layout.h"

namespace arch {

namespace {

constexpr std::size_t kCudaReserveBytes = std::size_t{1} << 30;  // context, NCCL, allocator slack
constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;           // kernels/cuda/gemm.h
constexpr std::size_t kNormPartials = 1024;  // kernels/cuda/ops.h kSumSquaresPartials (doubles)

std::size_t ceil_div(std::size_t a, std::size_t b) {
    return (a + b - 1) / b;
}

// Adds buffers of a size, as an engine allocates them: CPU exact, CUDA in 256-byte slices.
struct Sizer {
    bool cuda;
    std::size_t operator()(std::size_t bytes) const {
        return cuda ? ceil_div(std::max<std::size_t>(bytes, 1), 256) * 256 : bytes;
    }
};

// The CPU engine's fp32 buffers every family shares; the family's own come from its registration.
PassBuffers cpu_buffers(const ModelConfig& c, std::size_t B, std::size_t T) {
    const std::size_t N = B * T, C = c.channels, NH = c.num_heads, Vp = c.padded_vocab_size,
                      f = sizeof(float);
    const std::size_t att = B * NH * T * T;
    PassBuffers p;
    p.layer_attention = (N * C + att) * f;  // atty, att
    p.layer_input = N * C * f;
    PassCommon k{c, B, T, N, C, NH, f};
    k.att = att;
    k.io = 2 * N * sizeof(int) + N * Vp * f + N * f;  // inputs, targets, logits, losses
    family_spec(c.family).cpu_buffers(k, p);
    return p;
}

// kernels/cuda: CudaTransformer::ensure_activations, attention_sizes and the kernels' scratch sizes
// (bf16 activations, fp32 norm statistics); the family's allocate_activations from its registration.
PassBuffers cuda_buffers(const ModelConfig& c, std::size_t B, std::size_t T, bool fused) {
    const Sizer r{true};
    const std::size_t N = B * T, C = c.channels, NH = c.num_heads, Vp = c.padded_vocab_size, h = 2,
                      f = 4;
    const std::size_t rows = B * NH * T, tt = rows * T;
    const std::size_t saved = fused ? r(rows * f) : r(tt * h);
    const std::size_t att_scratch = fused ? r(rows * f) : 7 * r(N * C * h) + r(tt * f) + r(tt * h);
    const std::size_t chunks =
        std::clamp<std::size_t>(ceil_div(N, 64), 1, 128);  // bias.cu, rmsnorm.cu
    const std::size_t nc = r(N * C * h), stat = r(N * f);
    PassBuffers p;
    p.layer_attention = nc + saved;  // atty, and P or the log-sum-exp
    p.layer_input = nc;
    const std::size_t io =
        2 * r(N * sizeof(int)) + r(N * Vp * h) + stat;  // tokens, targets, logits, losses
    const std::size_t shared = 3 * nc + att_scratch +
                               r((3 * N + 1) * sizeof(int))  // dlnf, proj, dresidual, encoder
                               + kGemmWorkspaceBytes + r(kNormPartials * sizeof(double));
    PassCommon k{c, B, T, N, C, NH, f};
    k.io = io;
    k.h = h;
    k.nc = nc;
    k.stat = stat;
    k.saved = saved;
    k.chunks = chunks;
    k.shared = shared;
    k.round = [](std::size_t bytes) { return Sizer{true}(bytes); };
    family_spec(c.family).cuda_buffers(k, p);
    return p;
}

std::size_t activations(const PassBuffers& p, int L, Recompute recompute) {
    switch (recompute) {
        case Recompute::none:
            return L * p.layer + p.global;
        case Recompute::attention:  // every layer without its attention internals, one layer's
                                    // again in backward
            return L * (p.layer - p.layer_attention) + p.layer_attention + p.global;
        case Recompute::block:  // every block's input, one block's whole set again in backward
            return L * p.layer_input + (p.layer - p.layer_input) + p.global;
    }
    return 0;
}

}  // namespace

PlanDevice parse_plan_device(const std::string& name) {
    if (name == "cpu") return PlanDevice::cpu;
    if (name == "cuda") return PlanDevice::cuda;
    throw Error("device '" + name + "' is not known (cpu, cuda)");
}

std::size_t parse_bytes(const std::string& text) {
    const std::string bad =
        "'" + text + "' is not a memory size (e.g. 24GiB, 512MiB, 80GB, or bytes)";
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
        ++i;
    if (i == 0) throw Error(bad);
    double value = 0;
    try {
        std::size_t used = 0;
        value = std::stod(text.substr(0, i), &used);
        if (used != i) throw Error(bad);
    } catch (const std::logic_error&) {
        throw Error(bad);
    }
    std::string unit;
    for (std::size_t j = i; j < text.size(); ++j)
        if (text[j] != ' ')
            unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[j])));
    static const std::pair<const char*, double> units[] = {{"", 1},
                                                           {"b", 1},
                                                           {"kib", 1024.0},
                                                           {"mib", 1048576.0},
                                                           {"gib", 1073741824.0},
                                                           {"tib", 1099511627776.0},
                                                           {"k", 1e3},
                                                           {"kb", 1e3},
                                                           {"m", 1e6},
                                                           {"mb", 1e6},
                                                           {"g", 1e9},
                                                           {"gb", 1e9},
                                                           {"t", 1e12},
                                                           {"tb", 1e12}};
    for (const auto& [name, scale] : units)
        if (unit == name) {
            const double bytes = value * scale;
            if (!(bytes >= 1) || bytes > 1e18) throw Error(bad);
            return static_cast<std::size_t>(bytes);
        }
    throw Error(bad);
}

std::string format_bytes(std::size_t bytes) {
    char buf[32];
    const double b = static_cast<double>(bytes);
    if (b >= 1073741824.0)
        std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
    else if (b >= 1048576.0)
        std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
    else if (b >= 1024.0)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    return buf;
}

DeviceBytes plan_device_bytes(const PlanRequest& q) {
    const ModelConfig& c = q.model;
    const ParamLayout layout(c);
    const std::size_t P = layout.num_params(), N = static_cast<std::size_t>(q.devices);
    const bool cuda = q.device == PlanDevice::cuda;
    const std::size_t weight = cuda ? 2 : 4;      // what the passes read
    const std::size_t optimizer = cuda ? 12 : 8;  // (master,) m, v
    DeviceBytes d;
    std::size_t state = P;  // floats of the whole model, or of this rank's shard
    if (q.parallel == Parallel::zero3) {
        // The engines' shards (core/shard_layout.h; GPU pieces padded to pairs for the bf16 gathers).
        const ShardLayout shards(layout, static_cast<int>(N), 0, cuda ? 2 : 1);
        state = shards.shard_size;
        // Transient full units (the stores' pools): the globals' weights and gradients for the
        // whole pass, and of blocks two weights (this one and the prefetched one) and two gradients
        // (this one and the one in its reduce-scatter).
        const std::size_t G = shards.units.back().full;
        const std::size_t K = c.num_layers > 0 ? shards.units.front().full : 0;
        d.comm = (G + 2 * K) * weight + (G + 2 * K) * 4;
    }
    d.params = state * weight;
    d.grads = state * 4;
    d.optimizer = q.offload == Offload::optimizer ? 0 : state * optimizer;
    const PassBuffers p =
        cuda ? cuda_buffers(c, q.B, q.T, q.fused_attention) : cpu_buffers(c, q.B, q.T);
    d.activations = activations(p, c.num_layers, q.recompute);
    d.workspace = p.workspace;
    d.reserve = cuda ? kCudaReserveBytes : 0;
    return d;
}

MemoryPlan plan_memory(const PlanRequest& request) {
    MemoryPlan plan;
    plan.request = request;
    PlanRequest& q = plan.request;
    validate(q.model);
    if (q.devices < 1)
        throw Error("plan: devices must be at least 1, got " + std::to_string(q.devices));
    if (q.B < 1)
        throw Error("plan: the micro-batch must be at least 1, got " + std::to_string(q.B));
    if (q.T == 0) q.T = q.model.max_seq_len;
    if (q.T < 1 || q.T > q.model.max_seq_len)
        throw Error("plan: sequence length " + std::to_string(q.T) +
                    " is outside the model's [1, " + std::to_string(q.model.max_seq_len) + "]");
    if (q.offload == Offload::optimizer && q.device == PlanDevice::cpu)
        throw Error(
            "plan: --offload optimizer moves GPU state to host memory; CPU devices already hold it "
            "there");
    const ParamLayout layout(q.model);
    plan.num_params = layout.num_params();
    plan.device = plan_device_bytes(q);

    const std::size_t P = plan.num_params, N = static_cast<std::size_t>(q.devices),
                      f = sizeof(float);
    HostBytes& h = plan.host;
    if (q.offload == Offload::optimizer) {
        const std::size_t per_device = plan.device.grads / f;  // the state floats of one device
        h.offloaded_optimizer = N * per_device * 12;
        // Gradients stream to the CPU step one unit at a time through two pinned buffers per
        // device.
        std::size_t largest = 0;
        for (int u = 0; u < num_units(layout); ++u)
            largest = std::max(largest, unit_size(layout, u));
        if (q.parallel == Parallel::zero3) largest = ceil_div(largest, N);
        h.offload_staging = N * 2 * largest * f;
    }
    h.theta_replica = P * f;
    // With error feedback Δ is added into the residual in place, θ_i read a slice at a time (every
    // engine reads its own: a replica's whole vector, a ZeRO-3 rank its shard, no gather).
    h.pseudo_gradient = q.error_feedback ? 0 : P * f;
    h.ef_residual = q.error_feedback ? P * f : 0;
    h.overlap_carry = q.overlap ? 2 * P * f : 0;
    h.moments = q.desloc ? 2 * P * sizeof(uint16_t) : 0;  // bf16 m and v
    h.update = static_cast<std::size_t>(static_cast<double>(P) * q.update_bytes_per_param);

    auto fits = [&](const DeviceBytes& d) {
        return q.device_memory_bytes == 0 || d.total() <= q.device_memory_bytes;
    };
    plan.fits = fits(plan.device);
    // The largest micro-batch: memory grows with B, so double, then bisect.
    PlanRequest probe = q;
    auto fits_at = [&](int B) {
        probe.B = B;
        return fits(plan_device_bytes(probe));
    };
    if (q.device_memory_bytes == 0 || !fits_at(1)) return plan;
    int lo = 1, hi = 2;
    constexpr int kMaxB = 1 << 20;
    while (hi <= kMaxB && fits_at(hi)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (fits_at(mid) ? lo : hi) = mid;
    }
    plan.max_micro_batch = lo;
    return plan;
}

std::vector<PlanRequest> plan_modes(const PlanRequest& request) {
    std::vector<PlanRequest> modes;
    PlanRequest m = request;
    m.parallel = Parallel::ddp;
    m.recompute = Recompute::none;
    m.offload = Offload::none;
    modes.push_back(m);
    m.parallel = Parallel::zero3;
    modes.push_back(m);
    m.recompute = request.recompute == Recompute::none ? Recompute::block : request.recompute;
    modes.push_back(m);
    if (request.device == PlanDevice::cuda) {
        m.offload = Offload::optimizer;
        modes.push_back(m);
    }
    // The request itself, when it is none of the above.
    const bool listed = std::any_of(modes.begin(), modes.end(), [&](const PlanRequest& x) {
        return x.parallel == request.parallel && x.recompute == request.recompute &&
               x.offload == request.offload;
    });
    if (!listed) modes.push_back(request);
    return modes;
}

std::string plan_mode_name(const PlanRequest& q) {
    std::string s = parallel_name(q.parallel);
    if (q.recompute != Recompute::none)
        s += std::string(" + recompute ") + recompute_name(q.recompute);
    if (q.offload != Offload::none) s += std::string(" + offload ") + offload_name(q.offload);
    return s;
}

}  // namespace arch
