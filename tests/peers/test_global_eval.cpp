// tests/peers/test_global_eval.cpp: the host's evaluation of θ on a thread of its own (issue 28): it
// gives the loss a synchronous evaluation of the same θ gives, reads the θ it was handed however θ
// changes meanwhile (copy on write), takes one θ at a time, and reports a bad split as an error
// rather than ending the host.
#include <catch2/catch.hpp>

#include <random>

#include "core/data_loader.h"
#include "core/param_store.h"
#include "core/token_shard.h"
#include "core/trainer.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "peers/diloco/global_model.h"
#include "peers/global_eval.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {

struct Fixture {
    TempDir dir;
    ModelConfig model = model_preset("tiny");
    RunConfig config;
    std::string val = dir.file("val_000.bin");
    Fixture() {
        config.batch = 2;
        config.seq_len = 16;
        config.val_batches = 5;
        std::mt19937 rng(7);
        std::vector<uint16_t> tokens(2000);
        for (uint16_t& t : tokens) t = static_cast<uint16_t>(rng() % static_cast<unsigned>(model.vocab_size));
        write_token_shard(val, tokens);
    }
    // The same loss computed on this thread, the way a trainer's evaluation computes it.
    float loss_now(std::span<const float> theta) const {
        auto backend = make_cpu_backend();
        ViewParamStore params{ParamLayout(model)};
        params.view(theta);
        auto net = make_transformer(model, *backend, &params);
        DataLoader loader(val, config.batch, config.seq_len, DataOrder::sequential, 0);
        return mean_loss(*net, loader, config.batch, config.seq_len, config.val_batches);
    }
};

GlobalEval::Result finished(GlobalEval& eval) {
    eval.wait();
    std::optional<GlobalEval::Result> r = eval.take_result();
    REQUIRE(r);
    return *r;
}

}  // namespace

TEST_CASE("an evaluation beside the rounds gives the synchronous loss of the θ it was handed, however θ changes") {
    Fixture f;
    diloco::GlobalModel global(init_params(f.model, 1), diloco::OuterConfig{});
    const std::vector<float> before(global.theta().begin(), global.theta().end());
    GlobalEval eval(f.config, f.model, f.val);
    REQUIRE(eval.enabled());
    REQUIRE(eval.start(3, global.theta_snapshot()));
    // θ changes while the evaluation may still read it: the change goes to new memory (copy on write).
    std::vector<float> change(before.size(), 0.01f);
    global.apply_update(compression::make_codec("fp32")->encode(change), 0);
    const GlobalEval::Result r = finished(eval);
    CHECK(r.error.empty());
    CHECK(r.round == 3);
    CHECK(r.loss == Approx(f.loss_now(before)).epsilon(1e-6));
    CHECK(r.loss != Approx(f.loss_now(global.theta())).epsilon(1e-6));
    CHECK_FALSE(eval.take_result());  // once

    // One at a time: the next θ once the last is done.
    REQUIRE(eval.start(4, global.theta_snapshot()));
    const GlobalEval::Result next = finished(eval);
    CHECK(next.round == 4);
    CHECK(next.loss == Approx(f.loss_now(global.theta())).epsilon(1e-6));
}

TEST_CASE("an evaluation is refused while another is under way, and none without a validation split") {
    Fixture f;
    f.config.val_batches = 40;  // still under way when asked again, on any machine but a stalled one
    diloco::GlobalModel global(init_params(f.model, 1), diloco::OuterConfig{});
    GlobalEval eval(f.config, f.model, f.val);
    REQUIRE(eval.start(0, global.theta_snapshot()));
    if (eval.busy()) CHECK_FALSE(eval.start(1, global.theta_snapshot()));
    CHECK(finished(eval).round == 0);

    GlobalEval none(f.config, f.model, "");
    CHECK_FALSE(none.enabled());
    CHECK_FALSE(none.start(0, global.theta_snapshot()));
    CHECK_FALSE(none.busy());
}

TEST_CASE("a validation split gone bad is the evaluation's error, never the host's end") {
    Fixture f;
    diloco::GlobalModel global(init_params(f.model, 1), diloco::OuterConfig{});
    write_file(f.val, "not a token shard");
    GlobalEval eval(f.config, f.model, f.val);
    REQUIRE(eval.start(5, global.theta_snapshot()));
    const GlobalEval::Result r = finished(eval);
    CHECK(r.round == 5);
    CHECK(r.loss == -1);
    CHECK_FALSE(r.error.empty());
    INFO(r.error);
    // and the next evaluation still runs
    CHECK(eval.start(6, global.theta_snapshot()));
    eval.wait();
}
