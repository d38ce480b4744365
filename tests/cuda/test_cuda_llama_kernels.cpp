// tests/cuda/test_cuda_llama_kernels.cpp: the bf16 CUDA ops the Llama family adds (RMSNorm with and
// without the fused residual, rotary embeddings, SwiGLU, the embedding without positions) against
// the fp32 CPU ops of kernels/cpu/ops.h, on random values rounded to bf16 that the CPU gets
// exactly. A GPU value passes when |gpu - cpu| <= atol + rtol |cpu|, with the tolerance and its
// reason at each op (device_data.h); reductions run twice to check the bits repeat. Grouped-query
// attention is in test_cuda_attention.cpp. Needs a GPU (gpu_main.cpp skips with a reason
// otherwise).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/llama.h"
#include "kernels/cpu/ops.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda/device_data.h"

using namespace cuda_test;

// ---- RMSNorm ------------------------------------------------------------------------------------
// Forward out: one bf16 rounding of an fp32 value whose rstd was summed in another order: rtol
// 2^-8, atol 1e-4 (|x rstd w| reaches ~4 here; fp32 drift is ~1e-6 of that). rstd: fp32, atol 1e-6
// + rtol 1e-5. Residual: exact (one rounding of the same fp32 sum).
TEST_CASE("rmsnorm forward and residual_rmsnorm_forward", "[cuda][kernels][llama]") {
    struct Shape {
        int N, C;
        std::size_t offset;  // elements: 1 forces the scalar path
    };
    for (const Shape s : {Shape{37, 72, 0}, Shape{37, 72, 1}, Shape{5, 36, 0}, Shape{64, 576, 0}}) {
        INFO("N " << s.N << " C " << s.C << " offset " << s.offset);
        const std::size_t NC = static_cast<std::size_t>(s.N) * s.C;
        const float eps = 1e-5f;
        const std::vector<float> a = random_bf16(NC, 11, -2, 3), b = random_bf16(NC, 12, -1, 1);
        const std::vector<float> w = random_bf16(s.C, 13, 0.5f, 1.5f);
        const Dev d_a = dev_bf16(a, s.offset), d_b = dev_bf16(b, s.offset), d_w = dev_bf16(w);
        Dev d_out = dev_bytes(NC * 2, s.offset * 2), d_res = dev_bytes(NC * 2, s.offset * 2);
        Dev d_rstd = dev_bytes(s.N * 4);
        std::vector<float> out(NC), rstd(s.N);

        arch::cuda::rmsnorm_forward(d_out.as<bf16>(), d_rstd.as<float>(), d_a.as<bf16>(),
                                    d_w.as<bf16>(), eps, s.N, s.C, nullptr);
        arch::cpu::rmsnorm_forward(out.data(), rstd.data(), a.data(), w.data(), eps, s.N, s.C);
        check_close("rmsnorm_forward out", get_bf16(d_out, NC), out, 1e-4, kBf16Rtol);
        check_close("rmsnorm_forward rstd", get_vec<float>(d_rstd, s.N), rstd, 1e-6, 1e-5);

        arch::cuda::residual_rmsnorm_forward(d_res.as<bf16>(), d_out.as<bf16>(), d_rstd.as<float>(),
                                             d_a.as<bf16>(), d_b.as<bf16>(), d_w.as<bf16>(), eps,
                                             s.N, s.C, nullptr);
        std::vector<float> res(NC);
        arch::cpu::residual_forward(res.data(), a.data(), b.data(), NC);
        for (float& v : res) v = round_bf16(v);
        arch::cpu::rmsnorm_forward(out.data(), rstd.data(), res.data(), w.data(), eps, s.N, s.C);
        check_close("residual_rmsnorm_forward residual", get_bf16(d_res, NC), res, 0.0, 0.0);
        check_close("residual_rmsnorm_forward out", get_bf16(d_out, NC), out, 1e-4, kBf16Rtol);
        check_close("residual_rmsnorm_forward rstd", get_vec<float>(d_rstd, s.N), rstd, 1e-6, 1e-5);
    }
}

// Backward dinp: bf16 += an fp32 gradient of terms up to ~|w dy| rstd ~ 3, rounded once: rtol
// 2^-8, atol 1e-4. dweight: fp32 column sums over rows in another order: sum_tolerance, rtol 0.
TEST_CASE("rmsnorm_backward", "[cuda][kernels][llama]") {
    struct Shape {
        int N, C;
        std::size_t offset;
    };
    for (const Shape s : {Shape{37, 72, 0}, Shape{37, 72, 1}, Shape{5, 36, 0}, Shape{2000, 576, 0},
                          Shape{300, 1000, 0}}) {
        INFO("N " << s.N << " C " << s.C << " offset " << s.offset);
        const std::size_t NC = static_cast<std::size_t>(s.N) * s.C;
        const std::vector<float> x = random_bf16(NC, 21, -2, 3), dout = random_bf16(NC, 22, -1, 1);
        const std::vector<float> w = random_bf16(s.C, 23, 0.5f, 1.5f);
        const std::vector<float> dinp0 = random_bf16(NC, 25, -1, 1);
        const std::vector<float> dw0 = random_floats(s.C, 26, -1, 1);
        std::vector<float> out(NC), rstd(s.N);
        arch::cpu::rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), 1e-5f, s.N, s.C);

        const Dev d_x = dev_bf16(x, s.offset), d_dout = dev_bf16(dout, s.offset), d_w = dev_bf16(w);
        const Dev d_rstd = dev_vec(rstd);
        Dev scratch = dev_bytes(arch::cuda::rmsnorm_backward_scratch_floats(s.N, s.C) * 4);
        std::vector<float> gpu_dinp[2], gpu_dw[2];
        for (int run = 0; run < 2; ++run) {
            const Dev d_dinp = dev_bf16(dinp0, s.offset), d_dw = dev_vec(dw0);
            arch::cuda::rmsnorm_backward(d_dinp.as<bf16>(), d_dw.as<float>(), scratch.as<float>(),
                                         d_dout.as<bf16>(), d_x.as<bf16>(), d_w.as<bf16>(),
                                         d_rstd.as<float>(), s.N, s.C, nullptr);
            gpu_dinp[run] = get_bf16(d_dinp, NC);
            gpu_dw[run] = get_vec<float>(d_dw, s.C);
        }
        std::vector<float> dinp = dinp0, dw = dw0;
        arch::cpu::rmsnorm_backward(dinp.data(), dw.data(), dout.data(), x.data(), w.data(),
                                    rstd.data(), s.N, s.C);
        std::vector<double> abs_dw(s.C);
        for (int c = 0; c < s.C; ++c) abs_dw[c] = std::fabs(dw0[c]);
        for (int n = 0; n < s.N; ++n) {
            for (int c = 0; c < s.C; ++c) {
                const std::size_t i = static_cast<std::size_t>(n) * s.C + c;
                abs_dw[c] += std::fabs(x[i] * rstd[n] * dout[i]);
            }
        }
        check_close("rmsnorm_backward dinp", gpu_dinp[0], dinp, 1e-4, kBf16Rtol);
        check_close("rmsnorm_backward dweight", gpu_dw[0], dw, sum_tolerance(abs_dw), 0.0);
        check_bits_equal("rmsnorm_backward dinp", gpu_dinp[0].data(), gpu_dinp[1].data(), NC * 4);
        check_bits_equal("rmsnorm_backward dweight", gpu_dw[0].data(), gpu_dw[1].data(), s.C * 4);
    }
}

// ---- rotary embeddings
// --------------------------------------------------------------------------- One bf16 rounding of
// x1 c - x2 s (fp32, the CPU's formula; the GPU may contract it into an FMA, ~1e-7 of |x|): rtol
// 2^-8, atol 1e-6. v heads: exact copies. The tables are the model's own (core/llama.h
// rope_tables), with Llama 3's frequency scaling in one shape.
TEST_CASE("rope forward and backward, in place too", "[cuda][kernels][llama]") {
    struct Shape {
        int B, T, NH, KV, hs;
        float scaling;  // rope_scaling.factor; 0: none
    };
    for (const Shape s :
         {Shape{2, 7, 4, 2, 32, 0}, Shape{1, 37, 3, 3, 16, 8}, Shape{2, 64, 9, 3, 64, 0}}) {
        INFO("B " << s.B << " T " << s.T << " NH " << s.NH << " KV " << s.KV << " hs " << s.hs);
        arch::ModelConfig c = arch::model_preset("llama-tiny");
        c.max_seq_len = 4096;  // long enough for the scaling's wavelengths to matter
        c.num_heads = s.NH;
        c.num_kv_heads = s.KV;
        c.channels = s.NH * s.hs;
        c.rope_theta = 10000.0f;
        c.rope_scaling.factor = s.scaling;
        c.rope_scaling.original_max_position = 64;
        const arch::RopeTables tables = arch::rope_tables(c);
        const std::size_t n = static_cast<std::size_t>(s.B) * s.T * (s.NH + 2 * s.KV) * s.hs;
        const std::vector<float> x = random_bf16(n, 31, -2, 2), dy = random_bf16(n, 32, -1, 1);
        std::vector<float> out(n), dx(n, 0.0f);
        arch::cpu::rope_forward(out.data(), x.data(), tables.cos.data(), tables.sin.data(), s.B,
                                s.T, s.NH, s.KV, s.hs);
        arch::cpu::rope_backward(dx.data(), dy.data(), tables.cos.data(), tables.sin.data(), s.B,
                                 s.T, s.NH, s.KV, s.hs);
        const Dev d_cos = dev_vec(tables.cos), d_sin = dev_vec(tables.sin);
        const Dev d_x = dev_bf16(x), d_dy = dev_bf16(dy);
        Dev d_out = dev_bytes(n * 2), d_dx = dev_bytes(n * 2);
        arch::cuda::rope_forward(d_out.as<bf16>(), d_x.as<bf16>(), d_cos.as<float>(),
                                 d_sin.as<float>(), s.B, s.T, s.NH, s.KV, s.hs, nullptr);
        arch::cuda::rope_backward(d_dx.as<bf16>(), d_dy.as<bf16>(), d_cos.as<float>(),
                                  d_sin.as<float>(), s.B, s.T, s.NH, s.KV, s.hs, nullptr);
        const std::vector<float> got = get_bf16(d_out, n), got_dx = get_bf16(d_dx, n);
        check_close("rope_forward", got, out, 1e-6, kBf16Rtol);
        check_close("rope_backward", got_dx, dx, 1e-6, kBf16Rtol);
        // In place, as the model calls both: the same bits as out of place.
        arch::cuda::rope_forward(d_x.as<bf16>(), d_x.as<bf16>(), d_cos.as<float>(),
                                 d_sin.as<float>(), s.B, s.T, s.NH, s.KV, s.hs, nullptr);
        arch::cuda::rope_backward(d_dy.as<bf16>(), d_dy.as<bf16>(), d_cos.as<float>(),
                                  d_sin.as<float>(), s.B, s.T, s.NH, s.KV, s.hs, nullptr);
        CHECK(get_bits(d_x, n) == bits_of(got));
        CHECK(get_bits(d_dy, n) == bits_of(got_dx));
        // v heads are copied unchanged.
        const int width = (s.NH + 2 * s.KV) * s.hs, v0 = (s.NH + s.KV) * s.hs;
        std::size_t changed = 0;
        for (std::size_t row = 0; row < n / width; ++row)
            for (int j = v0; j < width; ++j) changed += got[row * width + j] != x[row * width + j];
        CHECK(changed == 0);
    }
}

// ---- SwiGLU -------------------------------------------------------------------------------------
// One bf16 rounding of fp32 values (expf here, the CPU's polynomial fast_exp, both ~1e-7
// relative): rtol 2^-8, atol 1e-6 (the gate's derivative 1 + g (1 - sig) cancels near g = -1.28,
// leaving an fp32 error of ~1e-7 |g| absolute).
TEST_CASE("swiglu forward and backward", "[cuda][kernels][llama]") {
    struct Shape {
        int N, F;
        std::size_t offset;  // elements: 1 forces the scalar path
    };
    for (const Shape s : {Shape{37, 40, 0}, Shape{37, 40, 1}, Shape{3, 5, 0}, Shape{64, 1536, 0}}) {
        INFO("N " << s.N << " F " << s.F << " offset " << s.offset);
        const std::size_t NF = static_cast<std::size_t>(s.N) * s.F;
        const std::vector<float> inp = random_bf16(2 * NF, 41, -8, 8),
                                 dout = random_bf16(NF, 42, -1, 1);
        const Dev d_inp = dev_bf16(inp, s.offset), d_dout = dev_bf16(dout, s.offset);
        Dev d_out = dev_bytes(NF * 2, s.offset * 2), d_dinp = dev_bytes(2 * NF * 2, s.offset * 2);
        arch::cuda::swiglu_forward(d_out.as<bf16>(), d_inp.as<bf16>(), s.N, s.F, nullptr);
        arch::cuda::swiglu_backward(d_dinp.as<bf16>(), d_inp.as<bf16>(), d_dout.as<bf16>(), s.N,
                                    s.F, nullptr);
        std::vector<float> out(NF), dinp(2 * NF, 0.0f);
        arch::cpu::swiglu_forward(out.data(), inp.data(), s.N, s.F);
        arch::cpu::swiglu_backward(dinp.data(), inp.data(), dout.data(), s.N, s.F);
        check_close("swiglu_forward", get_bf16(d_out, NF), out, 1e-6, kBf16Rtol);
        check_close("swiglu_backward", get_bf16(d_dinp, 2 * NF), dinp, 1e-6, kBf16Rtol);
    }
}

// ---- the embedding without positions ------------------------------------------------------------
// Forward: exactly bf16(wte[token]). Backward: fp32 sums in another order: sum_tolerance, rtol 0.
TEST_CASE("encoder without a position embedding", "[cuda][kernels][llama]") {
    const int B = 2, T = 37, C = 72, Vp = 50, N = B * T;
    std::vector<int> inp(N);
    std::mt19937 rng(3);
    for (int& t : inp) t = static_cast<int>(rng() % 40);
    const std::vector<float> wte = random_bf16(static_cast<std::size_t>(Vp) * C, 1, -1, 1);
    const Dev d_inp = dev_vec(inp), d_wte = dev_bf16(wte);
    Dev d_out = dev_bytes(static_cast<std::size_t>(N) * C * 2);
    arch::cuda::encoder_forward(d_out.as<bf16>(), d_inp.as<int>(), d_wte.as<bf16>(), nullptr, B, T,
                                C, nullptr);
    std::vector<float> out(static_cast<std::size_t>(N) * C);
    arch::cpu::encoder_forward(out.data(), inp.data(), wte.data(), nullptr, B, T, C);
    check_close("encoder_forward", get_bf16(d_out, out.size()), out, 0.0, 0.0);

    const std::vector<float> dout = random_bf16(out.size(), 4, -1, 1);
    std::vector<float> dwte(wte.size(), 0.0f);
    const Dev d_dout = dev_bf16(dout), d_dwte = dev_vec(dwte);
    Dev scratch = dev_bytes(arch::cuda::encoder_backward_scratch_ints(B, T) * sizeof(int));
    arch::cuda::encoder_backward(d_dwte.as<float>(), nullptr, scratch.as<int>(), d_dout.as<bf16>(),
                                 inp.data(), B, T, C, nullptr);
    arch::cpu::encoder_backward(dwte.data(), nullptr, dout.data(), inp.data(), B, T, C);
    std::vector<double> abs_dwte(dwte.size(), 0.0);
    for (int n = 0; n < N; ++n)
        for (int c = 0; c < C; ++c)
            abs_dwte[static_cast<std::size_t>(inp[n]) * C + c] +=
                std::fabs(dout[static_cast<std::size_t>(n) * C + c]);
    check_close("encoder_backward dwte", get_vec<float>(d_dwte, dwte.size()), dwte,
                sum_tolerance(abs_dwte), 0.0);
}
