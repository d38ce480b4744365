// tests/cuda/test_cuda_gemm.cpp: the cuBLASLt GEMMs of kernels/cuda/gemm.h against the fp32 CPU
// matmul (kernels/cpu) and a plain host loop: the model's forward (bias and GELU epilogues, with the
// pre-GELU aux), its backward (dinp in bf16, dweight accumulated in fp32 with beta = 1), every
// transpose combination, batched strides, and reruns giving the same bits. Needs a GPU.
// Tolerance per element: |gpu - ref| <= 2^-8 |ref| + 1e-5 * sum_k |a_ik b_kj|: the inputs
// are bf16-exact, the accumulation is fp32 (its error is ~K * 2^-24 of the absolute sum), and a bf16
// output adds half an ulp (2^-9 relative); fp32 outputs get 2^-16 instead of 2^-8.
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm.h"

using namespace arch;
using bf16 = __nv_bfloat16;

namespace {

float round_bf16(float x) { return cuda::bf16_bits_to_float(cuda::float_to_bf16_bits(x)); }

std::vector<float> random_bf16(std::size_t n, uint64_t seed, float scale = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = round_bf16(scale * rng.normal());
    return v;
}

// A device copy of host values (bf16 or fp32).
struct Dev {
    cuda::DeviceBuffer buf;
    std::size_t n;
    bool is_bf16;
    Dev(const std::vector<float>& host, bool as_bf16) : buf(host.size() * (as_bf16 ? 2 : 4)), n(host.size()), is_bf16(as_bf16) {
        if (as_bf16) {
            std::vector<uint16_t> bits(n);
            for (std::size_t i = 0; i < n; ++i) bits[i] = cuda::float_to_bf16_bits(host[i]);
            cuda::check(cudaMemcpy(buf.get(), bits.data(), n * 2, cudaMemcpyHostToDevice), "upload");
        } else {
            cuda::check(cudaMemcpy(buf.get(), host.data(), n * 4, cudaMemcpyHostToDevice), "upload");
        }
    }
    const bf16* b() const { return buf.as<bf16>(); }
    std::vector<float> get() const {
        cuda::check(cudaDeviceSynchronize(), "sync");
        std::vector<float> out(n);
        if (is_bf16) {
            std::vector<uint16_t> bits(n);
            cuda::check(cudaMemcpy(bits.data(), buf.get(), n * 2, cudaMemcpyDeviceToHost), "download");
            for (std::size_t i = 0; i < n; ++i) out[i] = cuda::bf16_bits_to_float(bits[i]);
        } else {
            cuda::check(cudaMemcpy(out.data(), buf.get(), n * 4, cudaMemcpyDeviceToHost), "download");
        }
        return out;
    }
};

// |gpu - ref| <= rtol |ref| + atol_i; rtol 2^-8 for a bf16 output (half an ulp), 2^-16 for fp32,
// unless the caller gives one.
void check_close(const char* what, const std::vector<float>& gpu, const std::vector<float>& ref,
                 const std::vector<float>& atol, bool bf16_out, double rtol = 0) {
    INFO(what);
    REQUIRE(gpu.size() == ref.size());
    if (rtol == 0) rtol = bf16_out ? std::ldexp(1.0, -8) : std::ldexp(1.0, -16);
    int bad = 0;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
        const double tol = rtol * std::abs(ref[i]) + atol[i] + 1e-30;
        if (!(std::abs(gpu[i] - ref[i]) <= tol)) {
            if (bad++ < 5) INFO("element " << i << ": gpu " << gpu[i] << " ref " << ref[i] << " tol " << tol);
            CHECK(std::abs(gpu[i] - ref[i]) <= tol);
        }
    }
    CHECK(bad == 0);
}

// The accumulation's share of the tolerance: 1e-5 of the sum of |terms| of each element.
std::vector<float> sum_tolerance(std::vector<float> abs_sum) {
    for (float& x : abs_sum) x *= 1e-5f;
    return abs_sum;
}

// Row-major reference: D (M x N) = alpha op(A) op(B) + beta D, and the sum of |terms| per element.
void host_gemm(std::vector<float>& D, std::vector<float>& abs_sum, const std::vector<float>& A, bool ta,
               const std::vector<float>& Bm, bool tb, int M, int N, int K, float alpha, float beta) {
    abs_sum.assign(static_cast<std::size_t>(M) * N, 0.0f);
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            double s = 0, a = 0;
            for (int k = 0; k < K; ++k) {
                const double x = ta ? A[static_cast<std::size_t>(k) * M + i] : A[static_cast<std::size_t>(i) * K + k];
                const double y = tb ? Bm[static_cast<std::size_t>(j) * K + k] : Bm[static_cast<std::size_t>(k) * N + j];
                s += x * y;
                a += std::abs(x * y);
            }
            float& d = D[static_cast<std::size_t>(i) * N + j];
            d = static_cast<float>(alpha * s + beta * d);
            abs_sum[static_cast<std::size_t>(i) * N + j] = static_cast<float>(std::abs(alpha) * a + std::abs(beta * d));
        }
}

}  // namespace

TEST_CASE("matmul forward with the bias and GELU epilogues matches the CPU", "[cuda][gemm]") {
    cudaStream_t stream;
    cuda::check(cudaStreamCreate(&stream), "stream");
    cuda::GemmContext ctx(stream);
    for (auto [N, C, OC] : {std::tuple{37, 72, 96}, std::tuple{256, 768, 3072}, std::tuple{64, 128, 1024}}) {
        CAPTURE(N, C, OC);
        const std::vector<float> inp = random_bf16(static_cast<std::size_t>(N) * C, 1),
                                 w = random_bf16(static_cast<std::size_t>(OC) * C, 2, 0.05f), b = random_bf16(OC, 3, 0.1f);
        std::vector<float> ref(static_cast<std::size_t>(N) * OC), abs_sum;
        cpu::matmul_forward(ref.data(), inp.data(), w.data(), b.data(), N, C, OC);
        std::vector<float> abs_inp(inp), abs_w(w), abs_b(b);
        for (float& x : abs_inp) x = std::abs(x);
        for (float& x : abs_w) x = std::abs(x);
        for (float& x : abs_b) x = std::abs(x);
        abs_sum.resize(ref.size());
        cpu::matmul_forward(abs_sum.data(), abs_inp.data(), abs_w.data(), abs_b.data(), N, C, OC);
        Dev d_inp(inp, true), d_w(w, true), d_b(b, true), out(std::vector<float>(ref.size()), true),
            aux(std::vector<float>(ref.size()), true);
        cuda::gemm(ctx, out.buf.get(), false, d_inp.b(), false, d_w.b(), true, N, OC, C, 1.0f, 0.0f, {},
                   cuda::Epilogue::bias, d_b.b());
        check_close("bias epilogue", out.get(), ref, sum_tolerance(abs_sum), true);

        // The fused GELU epilogue rounds twice on Hopper (cuBLASLt's sm_90 kernels, seen on an H200:
        // elements up to 17% past the half-ulp bound), so its outputs get one bf16 ulp, 2^-7.
        if (OC % 8 == 0) {  // GELU epilogue: aux = pre-activation, out = gelu_tanh(aux)
            cuda::gemm(ctx, out.buf.get(), false, d_inp.b(), false, d_w.b(), true, N, OC, C, 1.0f, 0.0f, {},
                       cuda::Epilogue::gelu_bias, d_b.b(), aux.buf.as<bf16>());
            check_close("GELU epilogue's pre-activation", aux.get(), ref, sum_tolerance(abs_sum), true,
                        std::ldexp(1.0, -7));
            const std::vector<float> pre = aux.get(), act = out.get();
            std::vector<float> want(pre.size());
            cpu::gelu_forward(want.data(), pre.data(), pre.size());
            // cuBLASLt applies GELU to the fp32 pre-activation, the reference to its bf16 rounding (aux):
            // |gelu'| <= 1.13, so up to 1.13 * 2^-9 |pre| apart, plus the tanh implementations' 1e-6.
            std::vector<float> slack(pre.size());
            for (std::size_t i = 0; i < pre.size(); ++i) slack[i] = 1.13f * std::ldexp(1.0f, -9) * std::abs(pre[i]) + 1e-6f;
            check_close("GELU epilogue's activation", act, want, slack, true, std::ldexp(1.0, -7));
        }
    }
    cudaStreamDestroy(stream);
}

TEST_CASE("matmul backward: dinp in bf16, dweight accumulated in fp32", "[cuda][gemm]") {
    cudaStream_t stream;
    cuda::check(cudaStreamCreate(&stream), "stream");
    cuda::GemmContext ctx(stream);
    const int N = 96, C = 64, OC = 192;
    const std::vector<float> inp = random_bf16(static_cast<std::size_t>(N) * C, 4),
                             w = random_bf16(static_cast<std::size_t>(OC) * C, 5, 0.05f),
                             dout = random_bf16(static_cast<std::size_t>(N) * OC, 6, 0.1f),
                             dw0 = random_bf16(static_cast<std::size_t>(OC) * C, 7, 0.01f);
    // dinp (N,C) = dout (N,OC) @ w (OC,C)
    std::vector<float> dinp_ref(static_cast<std::size_t>(N) * C, 0.0f), abs_dinp;
    host_gemm(dinp_ref, abs_dinp, dout, false, w, false, N, C, OC, 1.0f, 0.0f);
    // dw (OC,C) = dw0 + dout^T @ inp
    std::vector<float> dw_ref(dw0), abs_dw;
    host_gemm(dw_ref, abs_dw, dout, true, inp, false, OC, C, N, 1.0f, 1.0f);
    Dev d_inp(inp, true), d_w(w, true), d_dout(dout, true), d_dinp(std::vector<float>(dinp_ref.size()), true),
        d_dw(dw0, false);
    cuda::gemm(ctx, d_dinp.buf.get(), false, d_dout.b(), false, d_w.b(), false, N, C, OC);
    cuda::gemm(ctx, d_dw.buf.get(), true, d_dout.b(), true, d_inp.b(), false, OC, C, N, 1.0f, 1.0f);
    check_close("dinp", d_dinp.get(), dinp_ref, sum_tolerance(abs_dinp), true);
    check_close("dweight", d_dw.get(), dw_ref, sum_tolerance(abs_dw), false);
    cudaStreamDestroy(stream);
}

TEST_CASE("every transpose combination, batched strides, and identical bits on a rerun", "[cuda][gemm]") {
    cudaStream_t stream;
    cuda::check(cudaStreamCreate(&stream), "stream");
    cuda::GemmContext ctx(stream);
    const int M = 33, N = 40, K = 24, batch = 3;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            CAPTURE(ta, tb);
            const std::size_t sa = static_cast<std::size_t>(M) * K, sb = static_cast<std::size_t>(K) * N,
                              sd = static_cast<std::size_t>(M) * N;
            const std::vector<float> A = random_bf16(sa * batch, 8), Bm = random_bf16(sb * batch, 9);
            Dev dA(A, true), dB(Bm, true), dD(std::vector<float>(sd * batch), false);
            const cuda::GemmBatch b{batch, static_cast<long long>(sa), static_cast<long long>(sb),
                                    static_cast<long long>(sd)};
            cuda::gemm(ctx, dD.buf.get(), true, dA.b(), ta, dB.b(), tb, M, N, K, 0.5f, 0.0f, b);
            const std::vector<float> first = dD.get();
            for (int i = 0; i < batch; ++i) {
                std::vector<float> ref(sd, 0.0f), abs_sum;
                const std::vector<float> Ai(A.begin() + i * sa, A.begin() + (i + 1) * sa),
                    Bi(Bm.begin() + i * sb, Bm.begin() + (i + 1) * sb);
                host_gemm(ref, abs_sum, Ai, ta, Bi, tb, M, N, K, 0.5f, 0.0f);
                check_close("batched", std::vector<float>(first.begin() + i * sd, first.begin() + (i + 1) * sd),
                            ref, sum_tolerance(abs_sum), false);
            }
            cuda::gemm(ctx, dD.buf.get(), true, dA.b(), ta, dB.b(), tb, M, N, K, 0.5f, 0.0f, b);
            const std::vector<float> again = dD.get();
            CHECK(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0);
        }
    cudaStreamDestroy(stream);
}

TEST_CASE("impossible GEMM requests are refused", "[cuda][gemm]") {
    cudaStream_t stream;
    cuda::check(cudaStreamCreate(&stream), "stream");
    cuda::GemmContext ctx(stream);
    Dev a(std::vector<float>(64, 1.0f), true), d(std::vector<float>(64), false);
    CHECK_THROWS_AS(cuda::gemm(ctx, d.buf.get(), true, a.b(), false, a.b(), false, 0, 8, 8), Error);
    CHECK_THROWS_AS(cuda::gemm(ctx, d.buf.get(), true, a.b(), false, a.b(), true, 8, 8, 8, 1.0f, 0.0f, {},
                               cuda::Epilogue::bias, a.b()),  // epilogue with an fp32 output
                    Error);
    cudaStreamDestroy(stream);
}
