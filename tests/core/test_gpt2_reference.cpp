// tests/core/test_gpt2_reference.cpp: the CPU engine against PyTorch (fixtures from
// tests/fixtures/make_gpt2_fixture.py): logits, loss, every gradient tensor, and a 10-step AdamW
// trajectory with clipping, all to 1e-4 relative; plus a finite-difference gradient check.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "core/adamw.h"
#include "core/checkpoint.h"
#include "core/file_io.h"
#include "core/gpt2.h"
#include "kernels/cpu/cpu_backend.h"

using namespace arch;

namespace {

struct Expected {
    int B, T, V, Vp, num_params, steps;
    std::vector<int> inputs, targets;
    std::vector<float> logits, grads, losses;
    float loss;
};

Expected read_expected(const std::string& path) {
    const std::vector<std::byte> bytes = read_file(path);
    int32_t h[256];
    std::memcpy(h, bytes.data(), sizeof(h));
    REQUIRE(h[0] == 20261129);
    Expected e{h[2], h[3], h[4], h[5], h[6], h[7], {}, {}, {}, {}, {}, 0.0f};
    const std::byte* p = bytes.data() + sizeof(h);
    auto take = [&](auto& vec, std::size_t n) {
        vec.resize(n);
        std::memcpy(vec.data(), p, n * sizeof(vec[0]));
        p += n * sizeof(vec[0]);
    };
    const std::size_t N = static_cast<std::size_t>(e.B) * e.T;
    take(e.inputs, N);
    take(e.targets, N);
    take(e.logits, N * e.V);
    std::memcpy(&e.loss, p, sizeof(float));
    p += sizeof(float);
    take(e.grads, e.num_params);
    take(e.losses, e.steps);
    REQUIRE(p == bytes.data() + bytes.size());
    return e;
}

// max |a-b| / max(|b|max, tiny) over a tensor: relative to the tensor's scale.
double rel_error(const float* a, const float* b, std::size_t n) {
    double maxdiff = 0.0, maxref = 1e-12;
    for (std::size_t i = 0; i < n; ++i) {
        maxdiff = std::max(maxdiff, static_cast<double>(std::fabs(a[i] - b[i])));
        maxref = std::max(maxref, static_cast<double>(std::fabs(b[i])));
    }
    return maxdiff / maxref;
}

struct Fixture {
    std::unique_ptr<Backend> backend = make_cpu_backend();
    ModelConfig config = read_checkpoint_config("tests/fixtures/gpt2_tiny_model.bin");
    GPT2 model{config, *backend};
    Expected expected = read_expected("tests/fixtures/gpt2_tiny_expected.bin");
    Fixture() { model.set_params(read_checkpoint_params("tests/fixtures/gpt2_tiny_model.bin", config)); }
};

}  // namespace

TEST_CASE("logits, loss and every gradient tensor match PyTorch to 1e-4 relative") {
    Fixture f;
    Expected& e = f.expected;
    const float loss = f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
    CHECK(std::fabs(loss - e.loss) <= 1e-4 * std::fabs(e.loss));

    // Logits come from a forward without targets (backward overwrites them in place).
    f.model.forward(e.inputs.data(), nullptr, e.B, e.T);
    for (int b = 0; b < e.B; ++b)
        for (int t = 0; t < e.T; ++t) {
            const std::vector<float> row = f.model.logits_at(b, t);
            const float* ref = e.logits.data() + (static_cast<std::size_t>(b) * e.T + t) * e.V;
            CHECK(rel_error(row.data(), ref, e.V) < 1e-4);
        }

    f.model.zero_grad();
    f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
    f.model.backward();
    std::vector<float> grads(f.model.num_params());
    f.model.get_grads(grads);
    // The fixture's gradients are in llm.c order; compare tensor by tensor after the same mapping.
    std::size_t cursor = 0;
    f.model.layout().for_each_in_llmc_order([&](const TensorView& t) {
        INFO("tensor " << t.name);
        CHECK(rel_error(grads.data() + t.offset, e.grads.data() + cursor, t.size) < 1e-4);
        cursor += t.size;
    });
}

TEST_CASE("a 10-step AdamW trajectory with clipping matches PyTorch to 1e-4") {
    Fixture f;
    Expected& e = f.expected;
    AdamW adamw(f.model.layout(), *f.backend);
    AdamWConfig c;
    c.beta1 = 0.9f;
    c.beta2 = 0.95f;
    c.eps = 1e-8f;
    c.weight_decay = 0.1f;
    c.grad_clip = 1.0f;
    for (int step = 0; step < e.steps; ++step) {
        f.model.zero_grad();
        const float loss = f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
        f.model.backward();
        INFO("step " << step << " loss " << loss << " expected " << e.losses[step]);
        CHECK(std::fabs(loss - e.losses[step]) <= 1e-4 * std::fabs(e.losses[step]));
        adamw.step(f.model.params(), f.model.grads(), 1e-2f, c);
    }
}

TEST_CASE("gradients agree with central finite differences") {
    Fixture f;
    Expected& e = f.expected;
    f.model.zero_grad();
    f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
    f.model.backward();
    std::vector<float> grads(f.model.num_params()), params(f.model.num_params());
    f.model.get_grads(grads);
    f.model.get_params(params);
    // In each tensor, probe the entry with the largest gradient (fp32 differences need a large signal).
    int checked = 0;
    for (const TensorView& t : f.model.layout().tensors()) {
        std::size_t best = t.offset;
        for (std::size_t i = t.offset; i < t.offset + t.size; ++i)
            if (std::fabs(grads[i]) > std::fabs(grads[best])) best = i;
        if (std::fabs(grads[best]) < 1e-3f) continue;
        const float h = 1e-2f, saved = params[best];
        params[best] = saved + h;
        f.model.set_params(params);
        const double up = f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
        params[best] = saved - h;
        f.model.set_params(params);
        const double down = f.model.forward(e.inputs.data(), e.targets.data(), e.B, e.T);
        params[best] = saved;
        const double numeric = (up - down) / (2.0 * h);
        INFO("tensor " << t.name << " analytic " << grads[best] << " numeric " << numeric);
        CHECK(std::fabs(numeric - grads[best]) <= 2e-2 * std::fabs(grads[best]) + 1e-4);
        ++checked;
    }
    CHECK(checked >= 20);
}
