// tests/cuda/test_cuda_attention.cpp: the CUDA attention (unfused and fused) against the fp32 CPU
// reference on the same bf16-rounded q, k, v and dout; fused against unfused; reruns bit-identical;
// dinp overwritten. Needs a GPU (gpu_main.cpp skips with exit 77 without one). Shapes: B=2, T=1..67
// (ragged tiles), NH 2..12, hs 32/64/128, and GPT-2 small's B=4, T=1024, C=768, NH=12; grouped KV
// heads (KV < NH, the Llama family's attention) with groups of 2, 3 and 4, and SmolLM-135M's heads.
#include <cuda_bf16.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"

namespace {

using arch::cuda::AttentionKind;
using bf16 = __nv_bfloat16;

struct Shape {
    int B, T, C, NH;
    int KV = 0;  // 0: NH (GPT-2's multi-head attention)
    int kv() const { return KV == 0 ? NH : KV; }
    int hs() const { return C / NH; }
    int width() const { return C + 2 * kv() * hs(); }  // a row of inp: q, k, v heads
    std::string name() const {
        return "B=" + std::to_string(B) + " T=" + std::to_string(T) + " C=" + std::to_string(C) +
               " NH=" + std::to_string(NH) + " KV=" + std::to_string(kv()) +
               " hs=" + std::to_string(hs());
    }
};

// Tolerance: |gpu - cpu| <= atol + rtol * |cpu| with rtol = 2 bf16 eps (eps = 2^-7) and atol = rtol
// * max|cpu| over the tensor (out, P, and each of dq, dk, dv on its own). The GPU rounds its
// outputs to bf16 (2^-8 relative) and rounds P (and dS) to bf16 before the second product, which
// perturbs each term of a sum by up to 2^-8 of itself; where a sum cancels (dq, dk: rows of dS sum
// to 0), the error is a fraction of the tensor's scale, not of the entry, hence the atol. Fused vs
// unfused: both sides carry that error, so twice the tolerance.
constexpr double kRtol = 1.0 / 64.0;

std::vector<float> random_bf16_values(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = __bfloat162float(__float2bfloat16(dist(rng)));
    return v;
}

std::vector<bf16> to_bf16(const std::vector<float>& v) {
    std::vector<bf16> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = __float2bfloat16(v[i]);
    return r;
}

std::vector<float> to_float(const std::vector<bf16>& v) {
    std::vector<float> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) r[i] = __bfloat162float(v[i]);
    return r;
}

struct Inputs {
    std::vector<float> inp, dout;  // bf16-representable values
};

Inputs make_inputs(const Shape& s, std::uint32_t seed) {
    const std::size_t bt = static_cast<std::size_t>(s.B) * s.T;
    return {random_bf16_values(bt * s.width(), seed), random_bf16_values(bt * s.C, seed + 1)};
}

struct CpuResult {
    std::vector<float> out, att, dinp;
};

CpuResult cpu_reference(const Shape& s, const Inputs& in) {
    const std::size_t bt = static_cast<std::size_t>(s.B) * s.T;
    const std::size_t tt = static_cast<std::size_t>(s.B) * s.NH * s.T * s.T;
    CpuResult r{std::vector<float>(bt * s.C), std::vector<float>(tt),
                std::vector<float>(bt * s.width(), 0.0f)};
    arch::cpu::attention_forward(r.out.data(), r.att.data(), in.inp.data(), s.B, s.T, s.C, s.NH,
                                 s.kv());
    std::vector<float> scratch(tt);
    arch::cpu::attention_backward(r.dinp.data(), scratch.data(), in.dout.data(), in.inp.data(),
                                  r.att.data(), s.B, s.T, s.C, s.NH,
                                  s.kv());  // accumulates into the zeroed dinp
    return r;
}

struct GpuResult {
    std::vector<bf16> out, dinp;
    std::vector<unsigned char> saved;
};

template <class T>
std::vector<T> download(const arch::cuda::DeviceBuffer& d, std::size_t count) {
    std::vector<T> h(count);
    arch::cuda::check(cudaMemcpy(h.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost),
                      "cudaMemcpy D2H");
    return h;
}

GpuResult run_gpu(AttentionKind kind, const Shape& s, const Inputs& in) {
    using arch::cuda::check;
    using arch::cuda::DeviceBuffer;
    const std::size_t bt = static_cast<std::size_t>(s.B) * s.T;
    const std::vector<bf16> inp = to_bf16(in.inp), dout = to_bf16(in.dout);
    const arch::cuda::AttentionSizes sizes = arch::cuda::attention_sizes(kind, s.B, s.T, s.C, s.NH);
    DeviceBuffer inp_d(inp.size() * sizeof(bf16)), dout_d(dout.size() * sizeof(bf16));
    DeviceBuffer out_d(bt * s.C * sizeof(bf16)), dinp_d(bt * s.width() * sizeof(bf16));
    DeviceBuffer saved_d(sizes.saved_bytes), scratch_d(sizes.scratch_bytes);
    check(cudaMemcpy(inp_d.get(), inp.data(), inp.size() * sizeof(bf16), cudaMemcpyHostToDevice),
          "cudaMemcpy H2D");
    check(cudaMemcpy(dout_d.get(), dout.data(), dout.size() * sizeof(bf16), cudaMemcpyHostToDevice),
          "cudaMemcpy H2D");
    // Garbage (NaN bits) in dinp and scratch: backward must overwrite every element and not read
    // stale scratch.
    check(cudaMemset(dinp_d.get(), 0xff, dinp_d.bytes()), "cudaMemset");
    check(cudaMemset(scratch_d.get(), 0xff, scratch_d.bytes()), "cudaMemset");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
    {
        arch::cuda::GemmContext ctx(stream);
        arch::cuda::attention_forward(kind, ctx, out_d.as<bf16>(), saved_d.get(), scratch_d.get(),
                                      inp_d.as<bf16>(), s.B, s.T, s.C, s.NH, s.kv());
        arch::cuda::attention_backward(kind, ctx, dinp_d.as<bf16>(), scratch_d.get(),
                                       dout_d.as<bf16>(), inp_d.as<bf16>(), out_d.as<bf16>(),
                                       saved_d.get(), s.B, s.T, s.C, s.NH, s.kv());
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(attention)");
    }
    check(cudaStreamDestroy(stream), "cudaStreamDestroy");
    return {download<bf16>(out_d, bt * s.C), download<bf16>(dinp_d, bt * s.width()),
            download<unsigned char>(saved_d, sizes.saved_bytes)};
}

// Counts entries outside atol + rtol*|want| (NaN counts as outside) and reports the worst one.
void check_close(const std::vector<float>& got, const std::vector<float>& want, double factor,
                 const std::string& what) {
    REQUIRE(got.size() == want.size());
    double max_ref = 0.0;
    for (float w : want) max_ref = std::max(max_ref, static_cast<double>(std::fabs(w)));
    const double rtol = kRtol * factor, atol = rtol * max_ref;
    std::size_t bad = 0, worst = 0;
    double worst_ratio = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        const double tol = atol + rtol * std::fabs(want[i]);
        if (!(err <= tol)) ++bad;
        const double ratio = std::isnan(err) ? INFINITY : err / tol;
        if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
    }
    if (std::getenv("ARCH_PRINT_ERRORS") != nullptr)  // the figures docs/cuda.md quotes
        std::printf("%s: worst error %.0f%% of its tolerance\n", what.c_str(), 100 * worst_ratio);
    INFO(what << ": " << bad << " of " << got.size() << " entries outside tolerance (atol " << atol
              << ", rtol " << rtol << "); worst at " << worst << ": got " << got[worst] << ", want "
              << want[worst]);
    CHECK(bad == 0);
}

// dq, dk or dv (part 0, 1, 2) of dinp (B,T,(NH+2KV)hs), so each is judged against its own scale.
std::vector<float> part(const std::vector<float>& dinp, const Shape& s, int which) {
    const std::size_t width = s.width(), rows = dinp.size() / width;
    const std::size_t kv = static_cast<std::size_t>(s.kv()) * s.hs();
    const std::size_t begin = which == 0 ? 0 : s.C + (which - 1) * kv, n = which == 0 ? s.C : kv;
    std::vector<float> r(rows * n);
    for (std::size_t row = 0; row < rows; ++row)
        std::copy_n(dinp.begin() + static_cast<std::ptrdiff_t>(row * width + begin), n,
                    r.begin() + static_cast<std::ptrdiff_t>(row * n));
    return r;
}

// Compares dq, dk and dv separately.
void check_dinp(const std::vector<float>& got, const std::vector<float>& want, const Shape& s,
                double factor, const std::string& what) {
    const char* names[] = {" dq", " dk", " dv"};
    for (int which = 0; which < 3; ++which)
        check_close(part(got, s, which), part(want, s, which), factor, what + names[which]);
}

const char* kind_name(AttentionKind k) {
    return k == AttentionKind::fused ? "fused" : "unfused";
}

void check_shape(const Shape& s, std::uint32_t seed, bool check_rerun) {
    INFO(s.name());
    const Inputs in = make_inputs(s, seed);
    const CpuResult cpu = cpu_reference(s, in);
    std::vector<GpuResult> gpu;
    for (AttentionKind kind : {AttentionKind::unfused, AttentionKind::fused}) {
        const std::string k = kind_name(kind);
        gpu.push_back(run_gpu(kind, s, in));
        check_close(to_float(gpu.back().out), cpu.out, 1.0, k + " out");
        check_dinp(to_float(gpu.back().dinp), cpu.dinp, s, 1.0, k);
        if (check_rerun) {
            const GpuResult again = run_gpu(kind, s, in);
            CHECK(std::memcmp(again.out.data(), gpu.back().out.data(),
                              again.out.size() * sizeof(bf16)) == 0);
            CHECK(std::memcmp(again.dinp.data(), gpu.back().dinp.data(),
                              again.dinp.size() * sizeof(bf16)) == 0);
            CHECK(again.saved == gpu.back().saved);
        }
    }
    // The unfused path saves P (B,NH,T,T) bf16: the CPU's att, rounded.
    std::vector<bf16> p(cpu.att.size());
    REQUIRE(gpu[0].saved.size() >= p.size() * sizeof(bf16));
    std::memcpy(p.data(), gpu[0].saved.data(), p.size() * sizeof(bf16));
    check_close(to_float(p), cpu.att, 1.0, "unfused saved P");
    check_close(to_float(gpu[1].out), to_float(gpu[0].out), 2.0, "fused vs unfused out");
    check_dinp(to_float(gpu[1].dinp), to_float(gpu[0].dinp), s, 2.0, "fused vs unfused");
}

}  // namespace

TEST_CASE("CUDA attention matches the CPU reference on small and ragged shapes",
          "[cuda][attention]") {
    const Shape shapes[] = {
        {2, 1, 64, 2},     // T = 1: one key per row
        {2, 2, 384, 12},   // hs 32, NH 12
        {2, 7, 192, 3},    // hs 64
        {2, 16, 256, 2},   // hs 128, one warp's rows
        {2, 33, 128, 4},   // hs 32
        {2, 63, 512, 8},   // hs 64, one short of a tile
        {2, 64, 768, 12},  // hs 64, exactly one tile
        {2, 65, 256, 2},   // hs 128, one past a tile
        {2, 67, 320, 5},   // hs 64
        {2, 50, 768, 6},   // hs 128
    };
    std::uint32_t seed = 1;
    for (const Shape& s : shapes) check_shape(s, seed += 7, s.T == 67);
}

TEST_CASE("CUDA attention with grouped KV heads matches the CPU reference", "[cuda][attention]") {
    const Shape shapes[] = {
        {2, 5, 128, 4, 2},   // hs 32, groups of 2
        {2, 67, 384, 6, 2},  // hs 64, groups of 3, ragged tiles
        {1, 33, 512, 4, 1},  // hs 128, one KV head for all (multi-query)
        {1, 70, 576, 9, 3},  // SmolLM-135M's heads: hs 64, groups of 3
    };
    std::uint32_t seed = 101;
    for (const Shape& s : shapes) check_shape(s, seed += 7, s.T == 67);
}

TEST_CASE("CUDA attention matches the CPU reference at GPT-2 small's shape",
          "[cuda][attention][large]") {
    check_shape({4, 1024, 768, 12}, 2024, true);
}

TEST_CASE("CUDA attention rejects shapes it does not support", "[cuda][attention]") {
    using arch::cuda::attention_sizes;
    CHECK_THROWS_AS(attention_sizes(AttentionKind::fused, 2, 8, 96, 2), arch::Error);  // hs 48
    CHECK_THROWS_AS(attention_sizes(AttentionKind::fused, 2, 8, 100, 3),
                    arch::Error);  // C % NH != 0
    CHECK_THROWS_AS(attention_sizes(AttentionKind::unfused, 2, 8, 36, 3), arch::Error);  // hs 12
    CHECK_THROWS_AS(attention_sizes(AttentionKind::unfused, 0, 8, 64, 2), arch::Error);
    CHECK_NOTHROW(attention_sizes(AttentionKind::fused, 2, 8, 96, 3));  // hs 32
    arch::cuda::GemmContext ctx(nullptr);
    for (AttentionKind kind : {AttentionKind::unfused, AttentionKind::fused})  // NH % KV != 0
        CHECK_THROWS_AS(arch::cuda::attention_forward(kind, ctx, nullptr, nullptr, nullptr, nullptr,
                                                      2, 8, 128, 4, 3),
                        arch::Error);
}
