// tests/core/test_llama_ops.cpp: the Llama family's CPU ops (RMSNorm, rotary embeddings, SwiGLU,
// grouped-query attention) checked against finite differences of their own forward: for a random
// weighting R of the output, d(sum R·out)/d(input) from backward must match central differences.
// Then the whole Llama model: every tensor kind's gradient against finite differences of the loss,
// the rotation's invariants, and GQA with one KV head per query head equal to GPT-2's attention.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <vector>

#include "core/llama.h"
#include "core/param_layout.h"
#include "core/rng.h"
#include "kernels/cpu/cpu_backend.h"

using namespace arch;

namespace {

std::vector<float> randn(std::size_t n, uint64_t seed, float scale = 1.0f) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = scale * rng.normal();
    return v;
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
}

// For f: input -> output, with analytic d(R·f)/d(input) given, compares every input coordinate with
// central differences (step h). Tolerance: |analytic - numeric| <= tol * max(1, |numeric|).
void check_gradient(std::vector<float>& input, std::size_t out_size,
                    const std::function<void(std::vector<float>& out)>& forward, const std::vector<float>& analytic,
                    float h = 1e-2f, double tol = 2e-3) {
    const std::vector<float> R = randn(out_size, 99);
    std::vector<float> out(out_size);
    double worst = 0.0;
    for (std::size_t i = 0; i < input.size(); ++i) {
        const float keep = input[i];
        input[i] = keep + h;
        forward(out);
        const double up = dot(R, out);
        input[i] = keep - h;
        forward(out);
        const double down = dot(R, out);
        input[i] = keep;
        const double numeric = (up - down) / (2.0 * h);
        worst = std::max(worst, std::abs(analytic[i] - numeric) / std::max(1.0, std::abs(numeric)));
    }
    INFO("worst relative gradient error " << worst);
    CHECK(worst <= tol);
}

}  // namespace

TEST_CASE("rmsnorm backward matches finite differences of its forward, for input and weight") {
    auto be = make_cpu_backend();
    const int N = 3, C = 16;
    const float eps = 1e-5f;
    std::vector<float> x = randn(N * C, 1), w = randn(C, 2), rstd(N), out(N * C);
    const std::vector<float> R = randn(N * C, 99);
    std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f);
    be->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), eps, N, C);
    be->rmsnorm_backward(dx.data(), dw.data(), R.data(), x.data(), w.data(), rstd.data(), N, C);
    auto fwd = [&](std::vector<float>& o) { be->rmsnorm_forward(o.data(), rstd.data(), x.data(), w.data(), eps, N, C); };
    check_gradient(x, N * C, fwd, dx);
    check_gradient(w, N * C, fwd, dw);
    // out = x / rms(x) * w: each row of x/rms has mean square 1.
    std::vector<float> ones(C, 1.0f);
    be->rmsnorm_forward(out.data(), rstd.data(), x.data(), ones.data(), 0.0f, N, C);
    for (int i = 0; i < N; ++i) {
        double ms = 0.0;
        for (int c = 0; c < C; ++c) ms += out[i * C + c] * out[i * C + c];
        CHECK(ms / C == Approx(1.0).epsilon(1e-5));
    }
}

TEST_CASE("rope backward matches finite differences; the rotation keeps each pair's norm and passes v through") {
    auto be = make_cpu_backend();
    ModelConfig c = model_preset("llama-tiny", 64);
    c.max_seq_len = 8;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.channels = 32;  // hs 8
    const RopeTables tables = rope_tables(c);
    const int B = 2, T = 5, NH = 4, KV = 2, hs = 8, W = (NH + 2 * KV) * hs;
    std::vector<float> x = randn(B * T * W, 3), out(B * T * W), dx(B * T * W, 0.0f);
    const std::vector<float> R = randn(B * T * W, 99);
    auto fwd = [&](std::vector<float>& o) {
        be->rope_forward(o.data(), x.data(), tables.cos.data(), tables.sin.data(), B, T, NH, KV, hs);
    };
    be->rope_backward(dx.data(), R.data(), tables.cos.data(), tables.sin.data(), B, T, NH, KV, hs);
    check_gradient(x, x.size(), fwd, dx);
    fwd(out);
    for (int row = 0; row < B * T; ++row) {
        const int t = row % T;
        for (int h = 0; h < NH + KV; ++h)
            for (int i = 0; i < hs / 2; ++i) {
                const float* a = &x[row * W + h * hs];
                const float* b = &out[row * W + h * hs];
                CHECK(std::hypot(b[i], b[i + hs / 2]) == Approx(std::hypot(a[i], a[i + hs / 2])).epsilon(1e-5));
                if (t == 0) CHECK(b[i] == a[i]);  // position 0 is not rotated
            }
        for (int j = (NH + KV) * hs; j < W; ++j) CHECK(out[row * W + j] == x[row * W + j]);
    }
    // Scores depend only on the distance between positions: q at t and k at t - 1 give the same dot
    // product for every t when q and k are the same vectors.
    std::vector<float> q(W * T);
    const std::vector<float> base = randn(W, 5);
    for (int t = 0; t < T; ++t)
        for (int j = 0; j < W; ++j) q[t * W + j] = base[j];
    std::vector<float> rotated(q.size());
    be->rope_forward(rotated.data(), q.data(), tables.cos.data(), tables.sin.data(), 1, T, NH, KV, hs);
    auto score = [&](int tq, int tk) {
        double s = 0.0;
        for (int i = 0; i < hs; ++i) s += rotated[tq * W + i] * rotated[tk * W + NH * hs + i];  // q head 0, k head 0
        return s;
    };
    for (int t = 2; t < T; ++t) CHECK(score(t, t - 1) == Approx(score(1, 0)).epsilon(1e-4));
}

TEST_CASE("swiglu backward matches finite differences of its forward") {
    auto be = make_cpu_backend();
    const int N = 3, F = 7;
    std::vector<float> x = randn(N * 2 * F, 4, 2.0f), out(N * F), dx(N * 2 * F, 0.0f);
    const std::vector<float> R = randn(N * F, 99);
    auto fwd = [&](std::vector<float>& o) { be->swiglu_forward(o.data(), x.data(), N, F); };
    be->swiglu_backward(dx.data(), x.data(), R.data(), N, F);
    check_gradient(x, N * F, fwd, dx);
    fwd(out);
    const float g = x[0], u = x[F];
    CHECK(out[0] == Approx(g / (1.0f + std::exp(-g)) * u).epsilon(1e-6));
}

TEST_CASE("grouped-query attention backward matches finite differences; KV = NH is GPT-2's attention") {
    auto be = make_cpu_backend();
    const int B = 2, T = 4, NH = 4, KV = 2, C = 16, hs = C / NH, W = (NH + 2 * KV) * hs;
    std::vector<float> x = randn(B * T * W, 6), out(B * T * C), att(B * NH * T * T), scratch(B * NH * T * T);
    std::vector<float> dx(B * T * W, 0.0f);
    const std::vector<float> R = randn(B * T * C, 99);
    auto fwd = [&](std::vector<float>& o) { be->attention_forward(o.data(), att.data(), x.data(), B, T, C, NH, KV); };
    fwd(out);
    be->attention_backward(dx.data(), scratch.data(), R.data(), x.data(), att.data(), B, T, C, NH, KV);
    check_gradient(x, B * T * C, fwd, dx);
    // The same input with each KV head repeated for its query heads, as HF's repeat_kv, through the
    // full multi-head attention (KV = NH) gives the same output.
    std::vector<float> full(B * T * 3 * C), out_full(B * T * C), att_full(att.size());
    for (int row = 0; row < B * T; ++row) {
        for (int j = 0; j < C; ++j) full[row * 3 * C + j] = x[row * W + j];
        for (int h = 0; h < NH; ++h)
            for (int i = 0; i < hs; ++i) {
                const int g = h / (NH / KV);
                full[row * 3 * C + C + h * hs + i] = x[row * W + C + g * hs + i];
                full[row * 3 * C + 2 * C + h * hs + i] = x[row * W + C + KV * hs + g * hs + i];
            }
    }
    be->attention_forward(out_full.data(), att_full.data(), full.data(), B, T, C, NH, NH);
    fwd(out);
    for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == out_full[i]);
}

TEST_CASE("the Llama model's gradient of every tensor kind matches finite differences of its loss") {
    ModelConfig c = model_preset("llama-tiny", 50);
    c.num_layers = 2;
    c.channels = 16;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.ffn_hidden = 24;
    c.max_seq_len = 8;
    c.tied_embeddings = GENERATE(true, false);
    c.rope_theta = 500000.0f;
    c.rope_scaling = {8.0f, 1.0f, 4.0f, 4};  // Llama 3's scaling, on this tiny context
    INFO(describe(c));
    Llama model(c, make_cpu_backend());
    std::vector<float> params = llama_init_params(c, 7);
    for (float& p : params) p *= 3.0f;  // weights of order 0.06, so the loss is not flat
    model.set_params(params);
    const int B = 2, T = 6;
    std::vector<int> in(B * T), out(B * T);
    Rng rng(3);
    for (int i = 0; i < B * T; ++i) in[i] = static_cast<int>(rng.next_u64() % c.vocab_size), out[i] = (in[i] * 7 + 1) % c.vocab_size;
    model.zero_grad();
    model.forward(in.data(), out.data(), B, T);
    model.backward();
    std::vector<float> grads(params.size());
    model.get_grads(grads);
    const ParamLayout& layout = model.layout();
    // Five entries of every tensor, in central differences of the fp32 loss.
    double worst = 0.0;
    for (const TensorView& t : layout.tensors()) {
        for (int k = 0; k < 5; ++k) {
            const std::size_t rows = t.shape.size() == 2 && (t.name == "wte" || t.name == "lm_head") ? c.vocab_size : t.shape[0];
            const std::size_t i = t.offset + (k * 7919u) % (rows * (t.size / t.shape[0]));
            const float keep = params[i], h = 1e-3f;
            params[i] = keep + h;
            model.set_params(params);
            const double up = model.forward(in.data(), out.data(), B, T);
            params[i] = keep - h;
            model.set_params(params);
            const double down = model.forward(in.data(), out.data(), B, T);
            params[i] = keep;
            const double numeric = (up - down) / (2.0 * h);
            // fp32 rounding of the loss puts about 3e-4 of noise into `numeric`: small entries are
            // judged against 0.02 rather than their own size.
            const double err = std::abs(grads[i] - numeric) / (std::abs(numeric) + 0.02);
            INFO(t.name << "[" << i - t.offset << "] analytic " << grads[i] << " numeric " << numeric);
            CHECK(err <= 2e-2);
            worst = std::max(worst, err);
        }
    }
    WARN("worst relative error over the sampled entries: " << worst);
}

TEST_CASE("a Llama 3 vocabulary (128256) is a valid model; the shards' uint16 limit is prepare's, not the model's") {
    ModelConfig c = model_preset("llama-tiny", 128256);
    CHECK(c.padded_vocab_size == 128256);
    CHECK_NOTHROW(validate(c));
    c.vocab_size = c.padded_vocab_size = 1 << 25;
    CHECK_THROWS_WITH(validate(c), Catch::Contains("above 16777216"));
    c = model_preset("llama-tiny");
    c.num_kv_heads = 3;
    CHECK_THROWS_WITH(validate(c), Catch::Contains("KV heads 3 do not divide heads NH=4"));
    c.num_kv_heads = 2;
    c.channels = 132;  // hs 33: rope pairs need an even head size
    CHECK_THROWS_WITH(validate(c), Catch::Contains("even head size"));
}

TEST_CASE("the presets: every name is listed and valid; smollm-360m has SmolLM2-360M's 361,821,120 parameters") {
    for (const char* name : {"tiny", "small", "gpt2-124m", "llama-tiny", "smollm-135m", "smollm-360m"}) {
        CHECK(model_preset_names().find(name) != std::string::npos);
        CHECK_NOTHROW(validate(model_preset(name)));
    }
    CHECK_THROWS_WITH(model_preset("smollm-361m"), Catch::Contains("expected tiny, small, gpt2-124m, llama-tiny, smollm-135m or smollm-360m"));
    const ModelConfig c = model_preset("smollm-360m");
    CHECK(c.rope_theta == 100000.0f);
    CHECK(c.tied_embeddings);
    // transformers' LlamaForCausalLM on SmolLM2-360M's config.json counts 361,821,120 (tied: lm_head is
    // the embedding); the layout holds V x C rows padded to Vp, whose extra rows transformers does not have.
    const std::size_t padded_rows = static_cast<std::size_t>(c.padded_vocab_size - c.vocab_size) * c.channels;
    CHECK(ParamLayout(c).num_params() - padded_rows == 361'821'120u);
}
