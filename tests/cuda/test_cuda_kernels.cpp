// tests/cuda/test_cuda_kernels.cpp: the bf16 CUDA ops of kernels/cuda/ops.h (all but GEMM and
// attention) against the fp32 CPU ops of kernels/cpu/ops.h. Inputs are random values rounded to
// bf16; the CPU op gets exactly those values. A GPU value passes when |gpu - cpu| <= atol + rtol
// |cpu|, with the tolerance and its reason written at each op. Reductions and stochastic rounding
// are also run twice to check the bits repeat. Needs a GPU (gpu_main.cpp skips with a reason
// otherwise).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/bf16_math.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/ops.h"
#include "tests/cuda/device_data.h"

using namespace cuda_test;

// ---- conversions
// --------------------------------------------------------------------------------- Exact: to_bf16
// must give the very bits of float_to_bf16_bits (the codec's), to_fp32 is exact.
TEST_CASE("to_bf16 and to_fp32 are exact conversions", "[cuda][kernels]") {
    for (std::size_t n : {std::size_t{1}, std::size_t{37}, std::size_t{1000003}}) {
        for (std::size_t offset : {0, 1}) {
            std::vector<float> x = random_floats(n, 7, -3e4f, 3e4f);
            x[0] = -0.0f;
            if (n > 10) {
                x[1] = 3.4e38f;      // saturates
                x[2] = 1e-41f;       // subnormal
                x[3] = INFINITY;     // stays inf
                x[4] = 1.00390625f;  // tie
            }
            const Dev src = dev_vec(x, offset);
            Dev dst = dev_bytes(n * 2, offset * 2);
            arch::cuda::to_bf16(dst.as<bf16>(), src.as<float>(), n, nullptr);
            const std::vector<std::uint16_t> got = get_bits(dst, n);
            INFO("n " << n << " offset " << offset);
            CHECK(got == bits_of(x));

            Dev back = dev_bytes(n * 4, offset * 4);
            arch::cuda::to_fp32(back.as<float>(), dst.as<bf16>(), n, nullptr);
            const std::vector<float> f = get_vec<float>(back, n);
            std::vector<float> expected(n);
            for (std::size_t i = 0; i < n; ++i)
                expected[i] = arch::cuda::bf16_bits_to_float(got[i]);
            CHECK(std::memcmp(f.data(), expected.data(), n * 4) == 0);
        }
    }
}

// ---- encoder
// ------------------------------------------------------------------------------------- Forward:
// exact; the GPU adds the same two bf16 values in fp32 and rounds once, so gpu == bf16(cpu).
// Backward: fp32 sums of bf16 values in another order: sum_tolerance, rtol 0.
TEST_CASE("encoder forward and backward", "[cuda][kernels]") {
    struct Shape {
        int B, T, C, Vp;
    };
    for (const Shape s : {Shape{2, 37, 72, 50}, Shape{3, 5, 36, 20}, Shape{4, 64, 768, 50304}}) {
        INFO("B " << s.B << " T " << s.T << " C " << s.C << " Vp " << s.Vp);
        const int N = s.B * s.T;
        const std::size_t NC = static_cast<std::size_t>(N) * s.C;
        std::vector<int> inp(N);
        std::mt19937 rng(3);
        for (int& t : inp) t = static_cast<int>(rng() % std::min(s.Vp, 40));  // many repeats
        inp[N - 1] = s.Vp - 1;
        const std::vector<float> wte = random_bf16(static_cast<std::size_t>(s.Vp) * s.C, 1, -1, 1);
        const std::vector<float> wpe = random_bf16(static_cast<std::size_t>(s.T) * s.C, 2, -1, 1);
        const Dev d_inp = dev_vec(inp), d_wte = dev_bf16(wte), d_wpe = dev_bf16(wpe);
        Dev d_out = dev_bytes(NC * 2);
        arch::cuda::encoder_forward(d_out.as<bf16>(), d_inp.as<int>(), d_wte.as<bf16>(),
                                    d_wpe.as<bf16>(), s.B, s.T, s.C, nullptr);
        std::vector<float> out(NC);
        arch::cpu::encoder_forward(out.data(), inp.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
        for (float& v : out) v = round_bf16(v);
        check_close("encoder_forward", get_bf16(d_out, NC), out, 0.0, 0.0);

        const std::vector<float> dout = random_bf16(NC, 4, -1, 1);
        std::vector<float> dwte = random_floats(wte.size(), 5, -1, 1),
                           dwpe = random_floats(wpe.size(), 6, -1, 1);
        const Dev d_dout = dev_bf16(dout);
        Dev scratch = dev_bytes(arch::cuda::encoder_backward_scratch_ints(s.B, s.T) * sizeof(int));
        std::vector<float> gpu_wte[2], gpu_wpe[2];
        for (int run = 0; run < 2; ++run) {
            const Dev d_dwte = dev_vec(dwte), d_dwpe = dev_vec(dwpe);
            arch::cuda::encoder_backward(d_dwte.as<float>(), d_dwpe.as<float>(), scratch.as<int>(),
                                         d_dout.as<bf16>(), inp.data(), s.B, s.T, s.C, nullptr);
            gpu_wte[run] = get_vec<float>(d_dwte, dwte.size());
            gpu_wpe[run] = get_vec<float>(d_dwpe, dwpe.size());
        }
        std::vector<double> abs_wte(dwte.size()), abs_wpe(dwpe.size());
        for (std::size_t i = 0; i < dwte.size(); ++i) abs_wte[i] = std::fabs(dwte[i]);
        for (std::size_t i = 0; i < dwpe.size(); ++i) abs_wpe[i] = std::fabs(dwpe[i]);
        for (int n = 0; n < N; ++n) {
            for (int c = 0; c < s.C; ++c) {
                const double d = std::fabs(dout[static_cast<std::size_t>(n) * s.C + c]);
                abs_wte[static_cast<std::size_t>(inp[n]) * s.C + c] += d;
                abs_wpe[static_cast<std::size_t>(n % s.T) * s.C + c] += d;
            }
        }
        arch::cpu::encoder_backward(dwte.data(), dwpe.data(), dout.data(), inp.data(), s.B, s.T,
                                    s.C);
        check_close("encoder_backward dwte", gpu_wte[0], dwte, sum_tolerance(abs_wte), 0.0);
        check_close("encoder_backward dwpe", gpu_wpe[0], dwpe, sum_tolerance(abs_wpe), 0.0);
        check_bits_equal("encoder_backward dwte", gpu_wte[0].data(), gpu_wte[1].data(),
                         dwte.size() * 4);
        check_bits_equal("encoder_backward dwpe", gpu_wpe[0].data(), gpu_wpe[1].data(),
                         dwpe.size() * 4);
    }
}

// ---- layernorm
// ----------------------------------------------------------------------------------- Forward out:
// one bf16 rounding of an fp32 value whose mean/rstd were summed in another order: rtol 2^-8, atol
// 1e-4 (|norm * w| reaches ~5 with these inputs; fp32 drift is ~1e-6 of that). mean, rstd: fp32,
// atol 1e-6 + rtol 1e-5. Residual: exact (one rounding of the same fp32 sum).
TEST_CASE("layernorm forward and residual_layernorm_forward", "[cuda][kernels]") {
    struct Shape {
        int N, C;
        std::size_t offset;  // elements: 1 forces the scalar path
    };
    for (const Shape s : {Shape{37, 72, 0}, Shape{37, 72, 1}, Shape{5, 36, 0}, Shape{256, 768, 0},
                          Shape{3, 8192, 0}}) {
        INFO("N " << s.N << " C " << s.C << " offset " << s.offset);
        const std::size_t NC = static_cast<std::size_t>(s.N) * s.C;
        const std::vector<float> a = random_bf16(NC, 11, -2, 3), b = random_bf16(NC, 12, -1, 1);
        const std::vector<float> w = random_bf16(s.C, 13, 0.5f, 1.5f),
                                 bias = random_bf16(s.C, 14, -0.5f, 0.5f);
        const Dev d_a = dev_bf16(a, s.offset), d_b = dev_bf16(b, s.offset), d_w = dev_bf16(w),
                  d_bias = dev_bf16(bias);
        Dev d_out = dev_bytes(NC * 2, s.offset * 2), d_res = dev_bytes(NC * 2, s.offset * 2);
        Dev d_mean = dev_bytes(s.N * 4), d_rstd = dev_bytes(s.N * 4);
        std::vector<float> out(NC), mean(s.N), rstd(s.N);

        arch::cuda::layernorm_forward(d_out.as<bf16>(), d_mean.as<float>(), d_rstd.as<float>(),
                                      d_a.as<bf16>(), d_w.as<bf16>(), d_bias.as<bf16>(), s.N, s.C,
                                      nullptr);
        arch::cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), a.data(), w.data(),
                                     bias.data(), s.N, s.C);
        check_close("layernorm_forward out", get_bf16(d_out, NC), out, 1e-4, kBf16Rtol);
        check_close("layernorm_forward mean", get_vec<float>(d_mean, s.N), mean, 1e-6, 1e-5);
        check_close("layernorm_forward rstd", get_vec<float>(d_rstd, s.N), rstd, 1e-6, 1e-5);

        arch::cuda::residual_layernorm_forward(
            d_res.as<bf16>(), d_out.as<bf16>(), d_mean.as<float>(), d_rstd.as<float>(),
            d_a.as<bf16>(), d_b.as<bf16>(), d_w.as<bf16>(), d_bias.as<bf16>(), s.N, s.C, nullptr);
        std::vector<float> res(NC);
        arch::cpu::residual_forward(res.data(), a.data(), b.data(), NC);
        for (float& v : res) v = round_bf16(v);
        arch::cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), res.data(), w.data(),
                                     bias.data(), s.N, s.C);
        check_close("residual_layernorm_forward residual", get_bf16(d_res, NC), res, 0.0, 0.0);
        check_close("residual_layernorm_forward out", get_bf16(d_out, NC), out, 1e-4, kBf16Rtol);
        check_close("residual_layernorm_forward mean", get_vec<float>(d_mean, s.N), mean, 1e-6,
                    1e-5);
        check_close("residual_layernorm_forward rstd", get_vec<float>(d_rstd, s.N), rstd, 1e-6,
                    1e-5);
    }
}

// Backward dinp: bf16 += an fp32 gradient made of terms up to ~|w dy| rstd ~ 3, rounded once: rtol
// 2^-8, atol 1e-4. dweight, dbias: fp32 sums over rows in another order: sum_tolerance, rtol 0.
TEST_CASE("layernorm_backward", "[cuda][kernels]") {
    struct Shape {
        int N, C;
        std::size_t offset;
    };
    for (const Shape s : {Shape{37, 72, 0}, Shape{37, 72, 1}, Shape{5, 36, 0}, Shape{4096, 768, 0},
                          Shape{3, 8192, 0}, Shape{5000, 64, 0}}) {
        INFO("N " << s.N << " C " << s.C << " offset " << s.offset);
        const std::size_t NC = static_cast<std::size_t>(s.N) * s.C;
        const std::vector<float> x = random_bf16(NC, 21, -2, 3), dout = random_bf16(NC, 22, -1, 1);
        const std::vector<float> w = random_bf16(s.C, 23, 0.5f, 1.5f),
                                 bias = random_bf16(s.C, 24, -0.5f, 0.5f);
        const std::vector<float> dinp0 = random_bf16(NC, 25, -1, 1);
        const std::vector<float> dw0 = random_floats(s.C, 26, -1, 1),
                                 db0 = random_floats(s.C, 27, -1, 1);
        std::vector<float> out(NC), mean(s.N), rstd(s.N);
        arch::cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(),
                                     bias.data(), s.N, s.C);

        const Dev d_x = dev_bf16(x, s.offset), d_dout = dev_bf16(dout, s.offset), d_w = dev_bf16(w);
        const Dev d_mean = dev_vec(mean), d_rstd = dev_vec(rstd);
        Dev scratch = dev_bytes(arch::cuda::layernorm_backward_scratch_floats(s.N, s.C) * 4);
        std::vector<float> gpu_dinp[2], gpu_dw[2], gpu_db[2];
        for (int run = 0; run < 2; ++run) {
            const Dev d_dinp = dev_bf16(dinp0, s.offset), d_dw = dev_vec(dw0), d_db = dev_vec(db0);
            arch::cuda::layernorm_backward(d_dinp.as<bf16>(), d_dw.as<float>(), d_db.as<float>(),
                                           scratch.as<float>(), d_dout.as<bf16>(), d_x.as<bf16>(),
                                           d_w.as<bf16>(), d_mean.as<float>(), d_rstd.as<float>(),
                                           s.N, s.C, nullptr);
            gpu_dinp[run] = get_bf16(d_dinp, NC);
            gpu_dw[run] = get_vec<float>(d_dw, s.C);
            gpu_db[run] = get_vec<float>(d_db, s.C);
        }
        std::vector<float> dinp = dinp0, dw = dw0, db = db0;
        arch::cpu::layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), x.data(),
                                      w.data(), mean.data(), rstd.data(), s.N, s.C);
        std::vector<double> abs_dw(s.C), abs_db(s.C);
        for (int c = 0; c < s.C; ++c) abs_dw[c] = std::fabs(dw0[c]), abs_db[c] = std::fabs(db0[c]);
        for (int n = 0; n < s.N; ++n) {
            for (int c = 0; c < s.C; ++c) {
                const std::size_t i = static_cast<std::size_t>(n) * s.C + c;
                abs_dw[c] += std::fabs((x[i] - mean[n]) * rstd[n] * dout[i]);
                abs_db[c] += std::fabs(dout[i]);
            }
        }
        check_close("layernorm_backward dinp", gpu_dinp[0], dinp, 1e-4, kBf16Rtol);
        check_close("layernorm_backward dweight", gpu_dw[0], dw, sum_tolerance(abs_dw), 0.0);
        check_close("layernorm_backward dbias", gpu_db[0], db, sum_tolerance(abs_db), 0.0);
        check_bits_equal("layernorm_backward dinp", gpu_dinp[0].data(), gpu_dinp[1].data(), NC * 4);
        check_bits_equal("layernorm_backward dweight", gpu_dw[0].data(), gpu_dw[1].data(), s.C * 4);
        check_bits_equal("layernorm_backward dbias", gpu_db[0].data(), gpu_db[1].data(), s.C * 4);
    }
}

// ---- GELU
// ---------------------------------------------------------------------------------------- One bf16
// rounding of fp32 values (tanhf here, fast_tanh on the CPU, both ~1e-7): rtol 2^-8, atol 1e-6.
// Backward: atol 4e-6, because gelu' cancels (1 + tanh, 1 - tanh^2) where |x| ~ 5 and the CPU's
// fast_tanh error there reaches ~2e-6 absolute (measured against double).
TEST_CASE("gelu forward and backward", "[cuda][kernels]") {
    for (std::size_t n : {std::size_t{37}, std::size_t{1000003}}) {
        for (std::size_t offset : {0, 3}) {
            INFO("n " << n << " offset " << offset);
            const std::vector<float> x = random_bf16(n, 31, -6, 6),
                                     dout = random_bf16(n, 32, -1, 1);
            const Dev d_x = dev_bf16(x, offset), d_dout = dev_bf16(dout, offset);
            Dev d_out = dev_bytes(n * 2, offset * 2), d_dinp = dev_bytes(n * 2, offset * 2);
            arch::cuda::gelu_forward(d_out.as<bf16>(), d_x.as<bf16>(), n, nullptr);
            std::vector<float> out(n), dinp(n, 0.0f);
            arch::cpu::gelu_forward(out.data(), x.data(), n);
            check_close("gelu_forward", get_bf16(d_out, n), out, 1e-6, kBf16Rtol);

            arch::cuda::gelu_backward(d_dinp.as<bf16>(), d_x.as<bf16>(), d_dout.as<bf16>(), n,
                                      nullptr);
            arch::cpu::gelu_backward(dinp.data(), x.data(), dout.data(),
                                     n);  // accumulates into zeros
            check_close("gelu_backward", get_bf16(d_dinp, n), dinp, 4e-6, kBf16Rtol);
            // In place, as the model calls it (dinp == dout).
            arch::cuda::gelu_backward(d_dout.as<bf16>(), d_x.as<bf16>(), d_dout.as<bf16>(), n,
                                      nullptr);
            check_close("gelu_backward in place", get_bf16(d_dout, n), dinp, 4e-6, kBf16Rtol);
        }
    }
}

// ---- bias gradient
// ------------------------------------------------------------------------------- fp32 column sums
// of bf16 values in another order: sum_tolerance, rtol 0.
TEST_CASE("bias_backward", "[cuda][kernels]") {
    struct Shape {
        int N, OC;
        std::size_t offset;
    };
    for (const Shape s : {Shape{37, 72, 0}, Shape{37, 72, 1}, Shape{1, 5, 0}, Shape{129, 1000, 0},
                          Shape{4096, 2304, 0}, Shape{20000, 24, 0}}) {
        INFO("N " << s.N << " OC " << s.OC << " offset " << s.offset);
        const std::size_t n = static_cast<std::size_t>(s.N) * s.OC;
        const std::vector<float> dout = random_bf16(n, 41, -1, 1);
        const std::vector<float> db0 = random_floats(s.OC, 42, -1, 1);
        const Dev d_dout = dev_bf16(dout, s.offset);
        Dev scratch = dev_bytes(arch::cuda::bias_backward_scratch_floats(s.N, s.OC) * 4);
        std::vector<float> gpu[2];
        for (int run = 0; run < 2; ++run) {
            const Dev d_db = dev_vec(db0);
            arch::cuda::bias_backward(d_db.as<float>(), scratch.as<float>(), d_dout.as<bf16>(), s.N,
                                      s.OC, nullptr);
            gpu[run] = get_vec<float>(d_db, s.OC);
        }
        std::vector<float> db = db0;
        std::vector<double> abs_db(s.OC);
        for (int c = 0; c < s.OC; ++c) abs_db[c] = std::fabs(db0[c]);
        for (int r = 0; r < s.N; ++r) {
            for (int c = 0; c < s.OC; ++c) {
                db[c] += dout[static_cast<std::size_t>(r) * s.OC + c];
                abs_db[c] += std::fabs(dout[static_cast<std::size_t>(r) * s.OC + c]);
            }
        }
        check_close("bias_backward", gpu[0], db, sum_tolerance(abs_db), 0.0);
        check_bits_equal("bias_backward", gpu[0].data(), gpu[1].data(), s.OC * 4);
    }
}

// ---- classifier
// ---------------------------------------------------------------------------------- losses: fp32
// log-sum-exp of the same bf16 logits (__expf vs the CPU's polynomial exp, another order): atol
// 5e-5 + rtol 1e-5. dlogits: one bf16 rounding of (p - onehot) dloss: rtol 2^-8 plus atol 1e-5
// |dloss| for the target column's cancellation. Padded columns exactly 0.
TEST_CASE("classifier_forward_backward", "[cuda][kernels]") {
    struct Shape {
        int N, V, Vp;
        float spread;  // logits uniform in [-spread, spread]
    };
    for (const Shape s : {Shape{37, 1000, 1024, 4}, Shape{7, 997, 1001, 4}, Shape{3, 5, 8, 30},
                          Shape{8, 50257, 50304, 8}, Shape{2, 50257, 50304, 40}}) {
        INFO("N " << s.N << " V " << s.V << " Vp " << s.Vp << " spread " << s.spread);
        const std::size_t n = static_cast<std::size_t>(s.N) * s.Vp;
        std::vector<float> logits = random_bf16(n, 51, -s.spread, s.spread);
        for (int i = 0; i < s.N; ++i) {
            for (int j = s.V; j < s.Vp; ++j)
                logits[static_cast<std::size_t>(i) * s.Vp + j] = 1e4f;  // must be ignored
        }
        std::vector<int> targets(s.N);
        std::mt19937 rng(52);
        for (int& t : targets) t = static_cast<int>(rng() % s.V);
        targets[0] = s.V - 1;
        const float dloss = 1.0f / (s.N * 1024.0f);
        const Dev d_targets = dev_vec(targets);
        Dev d_losses = dev_bytes(s.N * 4);

        std::vector<float> losses(s.N);
        arch::cpu::crossentropy_forward(losses.data(), logits.data(), targets.data(), s.N, s.V,
                                        s.Vp);
        std::vector<float> dlogits = logits;
        arch::cpu::crossentropy_backward(dlogits.data(), targets.data(), dloss, s.N, s.V, s.Vp);

        // Without dlogits: losses, and the logits keep their bits.
        const Dev d_logits = dev_bf16(logits);
        arch::cuda::classifier_forward_backward(d_logits.as<bf16>(), d_losses.as<float>(),
                                                d_targets.as<int>(), dloss, s.N, s.V, s.Vp, false,
                                                nullptr);
        check_close("classifier losses", get_vec<float>(d_losses, s.N), losses, 5e-5, 1e-5);
        CHECK(get_bits(d_logits, n) == bits_of(logits));

        arch::cuda::classifier_forward_backward(d_logits.as<bf16>(), d_losses.as<float>(),
                                                d_targets.as<int>(), dloss, s.N, s.V, s.Vp, true,
                                                nullptr);
        check_close("classifier losses (with dlogits)", get_vec<float>(d_losses, s.N), losses, 5e-5,
                    1e-5);
        const std::vector<float> got = get_bf16(d_logits, n);
        check_close("classifier dlogits", got, dlogits, 1e-5 * dloss, kBf16Rtol);
        for (int i = 0; i < s.N; ++i) {
            for (int j = s.V; j < s.Vp; ++j)
                REQUIRE(got[static_cast<std::size_t>(i) * s.Vp + j] == 0.0f);
        }
    }
    // An out-of-range target gives a NaN loss, not a read outside the row.
    std::vector<float> logits = random_bf16(16, 53, -1, 1);
    const Dev d_logits = dev_bf16(logits), d_targets = dev_vec(std::vector<int>{-1, 8});
    Dev d_losses = dev_bytes(8);
    arch::cuda::classifier_forward_backward(d_logits.as<bf16>(), d_losses.as<float>(),
                                            d_targets.as<int>(), 1.0f, 2, 8, 8, false, nullptr);
    const std::vector<float> l = get_vec<float>(d_losses, 2);
    CHECK(std::isnan(l[0]));
    CHECK(std::isnan(l[1]));
}

// ---- AdamW
// --------------------------------------------------------------------------------------- master,
// m, v: fp32 with the same formula, differing only by FMA contraction: rtol 1e-6 + atol 1e-9
// (master), 1e-12 (v). m = b1 m + (1 - b1) g cancels, so its atol is 2^-22 of the two terms (a
// contraction changes one rounding of the larger term). params: bit-exact, the stochastic rounding
// of the GPU's own master with (seed, index), which is also one of the master's two bf16 neighbours.
TEST_CASE("adamw_update with stochastic rounding", "[cuda][kernels]") {
    for (std::size_t n : {std::size_t{37}, std::size_t{1000003}}) {
        for (std::size_t offset : {0, 1}) {
            INFO("n " << n << " offset " << offset);
            const std::vector<float> master0 = random_floats(n, 61, -1, 1),
                                     grads = random_floats(n, 62, -0.1f, 0.1f);
            const std::vector<float> m0 = random_floats(n, 63, -0.01f, 0.01f);
            std::vector<float> v0 = random_floats(n, 64, 0, 1e-3f);
            const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, wd = 0.1f,
                        scale = 0.5f;
            const int step = 3;
            const std::uint64_t seed = 0x1234abcdull;
            std::vector<std::uint16_t> params[2];
            std::vector<float> master[2], m[2], v[2];
            for (int run = 0; run < 2; ++run) {
                const Dev d_master = dev_vec(master0, offset), d_grads = dev_vec(grads, offset);
                const Dev d_m = dev_vec(m0, offset), d_v = dev_vec(v0, offset);
                Dev d_params = dev_bytes(n * 2, offset * 2);
                arch::cuda::adamw_update(d_master.as<float>(), d_params.as<bf16>(),
                                         d_grads.as<float>(), d_m.as<float>(), d_v.as<float>(), n,
                                         lr, beta1, beta2, eps, wd, scale, step, seed, nullptr);
                params[run] = get_bits(d_params, n);
                master[run] = get_vec<float>(d_master, n);
                m[run] = get_vec<float>(d_m, n);
                v[run] = get_vec<float>(d_v, n);
            }
            std::vector<float> cm = master0, cmm = m0, cv = v0;
            arch::cpu::adamw_update(cm.data(), grads.data(), cmm.data(), cv.data(), n, lr, beta1,
                                    beta2, eps, wd, scale, step);
            check_close("adamw master", master[0], cm, 1e-9, 1e-6);
            std::vector<double> m_tol(n);
            for (std::size_t i = 0; i < n; ++i)
                m_tol[i] = 1e-12 + 0x1p-22 * (beta1 * std::fabs(m0[i]) +
                                              (1.0 - beta1) * std::fabs(grads[i] * scale));
            check_close("adamw m", m[0], cmm, m_tol, 1e-6);
            check_close("adamw v", v[0], cv, 1e-12, 1e-6);
            std::size_t wrong = 0, up = 0;
            for (std::size_t i = 0; i < n; ++i) {
                wrong += params[0][i] !=
                         arch::cuda::float_to_bf16_bits_stochastic(master[0][i], seed, i);
                up += params[0][i] !=
                      static_cast<std::uint16_t>(arch::cuda::float_bits(master[0][i]) >> 16);
            }
            CHECK(wrong == 0);
            if (n > 1000) {
                CHECK(up > n / 10);  // rounding is really stochastic, not truncation
                CHECK(up < n * 9 / 10);
            }
            CHECK(params[0] == params[1]);
            check_bits_equal("adamw master", master[0].data(), master[1].data(), n * 4);
        }
    }
}

// ---- sum of squares
// ------------------------------------------------------------------------------ Double
// accumulation of fp32 squares in another order: rtol 1e-12. Bits repeat across runs.
TEST_CASE("sum_squares", "[cuda][kernels]") {
    Dev partials = dev_bytes(arch::cuda::kSumSquaresPartials * sizeof(double));
    CHECK(arch::cuda::sum_squares(nullptr, 0, partials.as<double>(), nullptr) == 0.0);
    for (std::size_t n :
         {std::size_t{1}, std::size_t{37}, std::size_t{1000003}, std::size_t{124475904}}) {
        for (std::size_t offset : {0, 1}) {
            INFO("n " << n << " offset " << offset);
            const std::vector<float> x = random_floats(n, 71, -2, 2);
            const Dev d_x = dev_vec(x, offset);
            const double a =
                arch::cuda::sum_squares(d_x.as<float>(), n, partials.as<double>(), nullptr);
            const double b =
                arch::cuda::sum_squares(d_x.as<float>(), n, partials.as<double>(), nullptr);
            const double cpu = arch::cpu::sum_squares(x.data(), n);
            CHECK(std::fabs(a - cpu) <= 1e-12 * cpu);
            CHECK(std::memcmp(&a, &b, sizeof a) == 0);
        }
    }
}
