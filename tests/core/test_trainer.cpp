// tests/core/test_trainer.cpp: the training loop: 20 steps straight equal 10 + save + resume 10 bit for
// bit (both data orders, with gradient accumulation); the loss falls on learnable data; impossible
// configs are refused before anything runs; the LR schedule's shape; optimizer = muon steps the
// matmul weights by Muon and everything else by AdamW.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/gpt2.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "core/trainer.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {

ModelConfig small_model() {
    ModelConfig c;
    c.max_seq_len = 32;
    c.vocab_size = 64;
    c.padded_vocab_size = pad_vocab(64);
    c.num_layers = 2;
    c.num_heads = 2;
    c.channels = 32;
    return c;
}

// A learnable stream: repeating phrases of a small vocabulary, with some noise.
void write_learnable_shard(const std::string& path, std::size_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint16_t> tokens(n);
    for (std::size_t i = 0; i < n; ++i)
        tokens[i] = static_cast<uint16_t>(rng.uniform() < 0.1f ? rng.below(64) : (i * 7 + (i / 5)) % 64);
    write_token_shard(path, tokens);
}

TrainConfig train_config(const TempDir& dir, DataOrder order) {
    TrainConfig t;
    t.B = 2;
    t.T = 16;
    t.grad_accum = 2;
    t.steps = 20;
    t.schedule.max_lr = 3e-3f;
    t.schedule.warmup_steps = 3;
    t.schedule.total_steps = 20;
    t.order = order;
    t.seed = 99;
    t.train_pattern = dir.file("train_*.bin");
    t.val_pattern = dir.file("val_000000.bin");
    t.val_batches = 2;
    return t;
}

struct Setup {
    TempDir dir;
    Setup() {
        write_learnable_shard(dir.file("train_000000.bin"), 3000, 1);
        write_learnable_shard(dir.file("train_000001.bin"), 2000, 2);
        write_learnable_shard(dir.file("val_000000.bin"), 500, 3);
    }
};

std::vector<float> run_steps(Trainer& t, int n) {
    std::vector<float> losses;
    for (int i = 0; i < n; ++i) losses.push_back(t.step().loss);
    return losses;
}

}  // namespace

TEST_CASE("20 steps straight and 10 + resume + 10 give bit-identical losses") {
    for (DataOrder order : {DataOrder::shuffled, DataOrder::sequential}) {
        Setup s;
        auto backend = make_cpu_backend();
        std::vector<float> straight;
        {
            GPT2 model(small_model(), *backend);
            model.init_weights(5);
            Trainer t(model, train_config(s.dir, order));
            straight = run_steps(t, 20);
        }
        std::vector<float> resumed;
        {
            GPT2 model(small_model(), *backend);
            model.init_weights(5);
            Trainer t(model, train_config(s.dir, order));
            resumed = run_steps(t, 10);
            t.save(s.dir.file("ckpt.bin"));
            // A validation between save and the end must not disturb the training stream.
            t.evaluate();
        }
        {
            GPT2 model(small_model(), *backend);
            model.init_weights(12345);  // overwritten by resume
            Trainer t(model, train_config(s.dir, order));
            t.resume(s.dir.file("ckpt.bin"));
            CHECK(t.steps_done() == 10);
            const std::vector<float> rest = run_steps(t, 10);
            resumed.insert(resumed.end(), rest.begin(), rest.end());
        }
        REQUIRE(resumed.size() == straight.size());
        for (std::size_t i = 0; i < straight.size(); ++i) {
            INFO("order " << static_cast<int>(order) << " step " << i + 1);
            CHECK(resumed[i] == straight[i]);  // exact equality: bit-identical
        }
    }
}

TEST_CASE("training on learnable data lowers the validation loss") {
    Setup s;
    auto backend = make_cpu_backend();
    GPT2 model(small_model(), *backend);
    model.init_weights(5);
    TrainConfig c = train_config(s.dir, DataOrder::shuffled);
    c.steps = 60;
    c.schedule.total_steps = 60;
    Trainer t(model, c);
    const float before = t.evaluate();
    run_steps(t, 60);
    const float after = t.evaluate();
    INFO("val loss before " << before << " after " << after);
    CHECK(before > 3.9f);  // about ln(64) = 4.16 at init
    CHECK(after < before - 0.8f);
}

TEST_CASE("impossible training configs are refused with a clear error") {
    Setup s;
    auto backend = make_cpu_backend();
    GPT2 model(small_model(), *backend);
    TrainConfig c = train_config(s.dir, DataOrder::sequential);
    c.T = 64;  // above max T = 32
    CHECK_THROWS_WITH(Trainer(model, c), Catch::Contains("exceeds the model's max T"));
    c = train_config(s.dir, DataOrder::sequential);
    c.B = 200;  // B*T = 3200 > the 2000-token shard
    CHECK_THROWS_AS(Trainer(model, c), Error);
    c = train_config(s.dir, DataOrder::sequential);
    c.train_pattern = s.dir.file("missing_*.bin");
    CHECK_THROWS_AS(Trainer(model, c), Error);
    ModelConfig bad = small_model();
    bad.num_heads = 3;  // 32 % 3 != 0
    CHECK_THROWS_WITH(GPT2(bad, *backend), Catch::Contains("not divisible by heads"));
}

TEST_CASE("resume refuses a corrupt run state and leaves the trainer unchanged") {
    Setup s;
    auto backend = make_cpu_backend();
    GPT2 model(small_model(), *backend);
    model.init_weights(5);
    Trainer t(model, train_config(s.dir, DataOrder::shuffled));
    run_steps(t, 3);
    t.save(s.dir.file("ckpt.bin"));
    std::string state = read_file_bytes(s.dir.file("ckpt.bin.state"));
    state[state.size() / 2] ^= 0x01;
    write_file(s.dir.file("ckpt.bin.state"), state);
    std::vector<float> before(model.num_params()), after(model.num_params());
    model.get_params(before);
    GPT2 other(small_model(), *backend);
    other.init_weights(7);
    Trainer t2(other, train_config(s.dir, DataOrder::shuffled));
    std::vector<float> other_before(other.num_params());
    other.get_params(other_before);
    CHECK_THROWS_WITH(t2.resume(s.dir.file("ckpt.bin")), Catch::Contains("checksum mismatch"));
    other.get_params(after);
    CHECK(after == other_before);
    CHECK(t2.steps_done() == 0);
}

TEST_CASE("the learning-rate schedule warms up linearly and decays by cosine to the floor") {
    LrSchedule s;
    s.max_lr = 1.0f;
    s.warmup_steps = 10;
    s.total_steps = 110;
    s.final_fraction = 0.1f;
    CHECK(s.at(0) == Approx(0.1f));
    CHECK(s.at(9) == Approx(1.0f));
    CHECK(s.at(10) == Approx(1.0f));
    CHECK(s.at(60) == Approx(0.55f));  // halfway: (1 + 0.1) / 2
    CHECK(s.at(110) == Approx(0.1f));
    s.kind = LrSchedule::Kind::constant;
    CHECK(s.at(80) == Approx(1.0f));
}

TEST_CASE("optimizer = muon: AdamW's step everywhere but the blocks' matmul weights, which take Muon's; the loss falls") {
    Setup s;
    auto backend = make_cpu_backend();
    TrainConfig c = train_config(s.dir, DataOrder::shuffled);
    GPT2 reference(small_model(), *backend), model(small_model(), *backend);
    reference.init_weights(5);
    model.init_weights(5);
    std::vector<float> theta0(model.num_params()), grads(theta0.size()), adamw(theta0.size()), muon(theta0.size());
    model.get_params(theta0);
    Trainer ref(reference, c);
    c.optimizer = arch::InnerOptimizer::muon;
    Trainer t(model, c);
    const float at_init = t.evaluate();
    const StepStats a = ref.step(), b = t.step();
    CHECK(a.loss == b.loss);
    reference.get_grads(grads);  // the same batch and θ: the same gradients
    reference.get_params(adamw);
    model.get_params(muon);
    const Muon shapes(ParamLayout(small_model()), c.muon);
    std::vector<bool> is_matrix(theta0.size(), false);
    for (const TensorView& m : shapes.matrices()) {
        INFO(m.name);
        // Step 1: momentum m = g, so u = (1 + μ) g, and NS5 normalizes the factor away.
        std::vector<float> u(grads.begin() + static_cast<std::ptrdiff_t>(m.offset),
                             grads.begin() + static_cast<std::ptrdiff_t>(m.offset + m.size));
        newton_schulz(u, m.shape[0], m.shape[1], 5);
        const float scale = 0.2f * std::sqrt(static_cast<float>(std::max(m.shape[0], m.shape[1])));
        float worst = 0;
        for (std::size_t k = 0; k < m.size; ++k) {
            const float want = theta0[m.offset + k] * (1 - a.lr * c.adamw.weight_decay) - a.lr * scale * u[k];
            worst = std::max(worst, std::abs(muon[m.offset + k] - want));
            is_matrix[m.offset + k] = true;
        }
        CHECK(worst < 1e-6f);
    }
    CHECK(shapes.matrices().size() == 4 * 2);  // qkv, attention proj, fc, fc proj in each of 2 blocks
    std::size_t same = 0, others = 0;
    for (std::size_t k = 0; k < theta0.size(); ++k)
        if (!is_matrix[k]) ++others, same += muon[k] == adamw[k];
    CHECK(same == others);  // embeddings, biases and norms: AdamW's step, bit for bit

    run_steps(t, 39);
    CHECK(t.evaluate() < at_init - 0.4f);  // about ln(64) = 4.16 at init
    CHECK_THROWS_WITH(t.save(s.dir.file("m.bin")), Catch::Contains("Muon's momentum is not saved"));
    CHECK_THROWS_WITH(arch::parse_named(arch::inner_optimizer_names(), "lion", "inner optimizer"),
                      "unknown inner optimizer 'lion' (adamw or muon)");
}

TEST_CASE("a model's init drawn on every thread holds exactly the values of one draw after another") {
    const std::size_t n = 3 * (std::size_t{1} << 16) + 7;  // several pieces, the last one short
    arch::Rng one_by_one(42), at_once(42);
    std::vector<float> expected(n), got(n);
    for (float& x : expected) x = 0.02f * one_by_one.normal();
    arch::fill_normal(at_once, got.data(), n, 0.02f);
    CHECK(std::memcmp(expected.data(), got.data(), n * sizeof(float)) == 0);
    CHECK(one_by_one.state() == at_once.state());  // the next tensor's draws start at the same place
}
