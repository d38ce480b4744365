// tests/cuda/test_cuda_island.cpp: an island of GPUs (core/island.h over whole CUDA models, gradients
// all-reduced after backward) trains like one GPU that accumulates the same micro-batches, keeps its
// AdamW state through save / resume, and reports per-device memory; a Llama-family island (grouped
// KV heads, untied lm_head) all-reduces and trains the same way. Needs 2 GPUs for the 2-device
// case (NCCL); with one it says so and checks the 1-device island against the Trainer bit for bit.
// Under the emulator (ARCH_CUDA_EMULATED) the two "GPUs" share host memory, so the CPU collective
// stands in for NCCL there.
// Tolerance for 2 devices vs 1: the same gradients summed in another order (fp32) move the bf16
// stochastic rounding of a few weights by one step: losses within 0.2%, parameters 1% relative L2.
// ZeRO-3 on GPUs (kernels/cuda/cuda_shards.h) is checked the same way over 20 steps, bit for bit
// against one GPU when the island has one rank, and for its per-device memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "compression/codec.h"
#include "core/transformer.h"
#include "core/trainer.h"
#include "kernels/cuda/cuda_transformer.h"
#include "kernels/cuda/island_codec.h"
#include "tests/core/state_slices.h"
#include "tests/cuda/island_fixture.h"

using namespace arch;
using namespace cuda_test;

TEST_CASE("an island of GPUs trains like one GPU accumulating the same micro-batches", "[cuda][island]") {
    const ModelConfig c = GENERATE(island_model(), island_llama());
    INFO(describe(c));
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    if (n == 1) std::printf("only one GPU: checking a 1-device island; the 2-device case needs 2 GPUs\n");

    auto one = cuda::make_cuda_model(c);
    one->init_weights(9);
    Trainer trainer(*one, data.config(n));
    auto island = gpu_island(c, data.config(1), n);
    island->init_weights(9);
    std::vector<float> a, b;
    for (int s = 0; s < 6; ++s) {
        a.push_back(trainer.step().loss);
        b.push_back(island->step().loss);
    }
    std::vector<float> pa(one->num_params()), pb(one->num_params());
    one->get_params(pa);
    island->get_params(pb);
    for (int s = 0; s < 6; ++s) {
        INFO("step " << s + 1 << ": one device " << a[s] << ", island " << b[s]);
        if (n == 1) CHECK(std::memcmp(&a[s], &b[s], sizeof(float)) == 0);
        else CHECK(std::abs(a[s] - b[s]) <= 2e-3f * a[s]);
    }
    if (n == 1) CHECK(pa == pb);
    else CHECK(rel_l2(pb, pa) <= 0.01);
    CHECK(b.back() < b.front());

    // The all-reduce overlapped with backward: one per unit (L blocks + the globals) per step, started
    // as backward left the unit, not one for the whole buffer at the end.
    const auto* rank0 = dynamic_cast<const cuda::CudaTransformer*>(island->model(0));
    REQUIRE(rank0 != nullptr);
    CHECK(rank0->ddp_reduces_queued() == 6 * (c.num_layers + 1));
    const auto mem = island->memory();
    REQUIRE(mem.size() == static_cast<std::size_t>(n));
    CHECK(mem[0].params_bytes == one->num_params() * 2);      // the bf16 copy the passes read
    CHECK(mem[0].optimizer_bytes == one->num_params() * 12);  // fp32 master, m and v
}

TEST_CASE("an island of GPUs resumes from its checkpoint bit for bit", "[cuda][island]") {
    const ModelConfig c = island_model();
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    std::vector<float> straight, replay;
    {
        auto island = gpu_island(c, data.config(1), n);
        island->init_weights(4);
        for (int s = 0; s < 6; ++s) straight.push_back(island->step().loss);
    }
    const std::string ckpt = data.dir.file("island.bin");
    {
        auto island = gpu_island(c, data.config(1), n);
        island->init_weights(4);
        for (int s = 0; s < 3; ++s) replay.push_back(island->step().loss);
        island->save(ckpt);
    }
    {
        auto island = gpu_island(c, data.config(1), n);
        island->resume(ckpt);
        for (int s = 3; s < 6; ++s) replay.push_back(island->step().loss);
    }
    for (int s = 0; s < 6; ++s) {
        INFO("step " << s + 1 << ": straight " << straight[s] << ", replay " << replay[s]);
        CHECK(std::memcmp(&straight[s], &replay[s], sizeof(float)) == 0);
    }
}

TEST_CASE("a ZeRO-3 island of one GPU is that GPU, bit for bit", "[cuda][island][zero3]") {
    // One rank: the shard is the whole vector (padded to pairs), so gathers, unit gradient buffers,
    // the rounding offsets and set/get must reproduce the unsharded model exactly. Clipping is off:
    // the norm's partial sums are grouped by the buffer's length, which the padding changes.
    const ModelConfig c = GENERATE(island_model(), island_llama());
    INFO(describe(c));
    TrainData data;
    TrainConfig t = data.config(1);
    t.adamw.grad_clip = 0.0f;
    auto one = cuda::make_cuda_model(c);
    one->init_weights(5);
    Trainer trainer(*one, t);
    auto island = gpu_island(c, t, 1, Parallel::zero3);
    island->init_weights(5);
    for (int s = 0; s < 4; ++s) {
        const float a = trainer.step().loss, b = island->step().loss;
        INFO("step " << s + 1 << ": one device " << a << ", ZeRO-3 of one " << b);
        CHECK(std::memcmp(&a, &b, sizeof(float)) == 0);
    }
    std::vector<float> pa(one->num_params()), pb(one->num_params());
    one->get_params(pa);
    island->get_params(pb);
    CHECK(pa == pb);
    std::vector<float> ma(pa.size()), va(pa.size()), mb(pa.size()), vb(pa.size());
    one->get_adamw_state(ma, va);
    island->get_adamw_state(mb, vb);
    CHECK(ma == mb);
    CHECK(va == vb);
}

TEST_CASE("slices of a GPU island's θ_i, m and v are its whole vectors; moments written in slices train as whole ones",
          "[cuda][island][zero3]") {
    // DDP replicas (rank 0 reads, every rank writes) and ZeRO-3 shards (each rank its own ranges, no
    // gather), as a DES-LOC peer reads and writes them; and one GPU alone (a Trainer).
    const ModelConfig c = island_model();
    TrainData data;
    const TrainConfig t = data.config(1, 4);
#if ARCH_TEST_GPU_ISLANDS
    for (const Parallel p : {Parallel::ddp, Parallel::zero3}) {
        INFO(parallel_name(p));
        state_slices::check_twins([&] {
            auto made = gpu_island(c, t, usable_gpus() >= 2 ? 2 : 1, p);
            made->init_weights(4);
            return made;
        });
    }
#else
    std::printf("SKIPPED (the islands): this build has no NCCL, so no island of GPUs\n");
#endif
    auto one = cuda::make_cuda_model(c), twin = cuda::make_cuda_model(c);
    one->init_weights(4);
    twin->init_weights(4);
    Trainer ta(*one, t), tb(*twin, t);
    for (int s = 0; s < 2; ++s) {
        ta.step();
        tb.step();
    }
    state_slices::check(ta, tb);
}

TEST_CASE("a ZeRO-3 island of GPUs trains like one GPU accumulating the same micro-batches", "[cuda][island][zero3]") {
#ifdef ARCH_CUDA_EMULATED
    // 20 emulated steps of both families take minutes; the Llama shards are checked by the two other
    // ZeRO-3 cases here, and by this one on a GPU.
    const ModelConfig c = island_model();
#else
    const ModelConfig c = GENERATE(island_model(), island_llama());
#endif
    INFO(describe(c));
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    if (n == 1) std::printf("only one GPU: checking a 1-device ZeRO-3 island; the 2-device case needs 2 GPUs\n");
    const int steps = 20;
    auto with_steps = [&](int accum) {  // one row per micro-batch keeps 20 emulated steps short
        TrainConfig t = data.config(accum);
        t.B = 1;
        t.steps = t.schedule.total_steps = steps;
        return t;
    };
    auto one = cuda::make_cuda_model(c);
    one->init_weights(9);
    Trainer trainer(*one, with_steps(n));
    auto island = gpu_island(c, with_steps(1), n, Parallel::zero3);
    island->init_weights(9);
    std::vector<float> a, b;
    for (int s = 0; s < steps; ++s) {
        a.push_back(trainer.step().loss);
        b.push_back(island->step().loss);
    }
    for (int s = 0; s < steps; ++s) {
        INFO("step " << s + 1 << ": one device " << a[s] << ", ZeRO-3 island " << b[s]);
        CHECK(std::abs(a[s] - b[s]) <= 2e-3f * a[s]);
    }
    std::vector<float> pa(one->num_params()), pb(one->num_params());
    one->get_params(pa);
    island->get_params(pb);
    CHECK(rel_l2(pb, pa) <= 0.01);
    // It learns: the mean loss of the last 5 steps against the first 5 (with one GPU a step is one
    // 32-token row, whose loss alone moves by more than 0.1 from step to step).
    const float first5 = (b[0] + b[1] + b[2] + b[3] + b[4]) / 5,
                last5 = (b[steps - 5] + b[steps - 4] + b[steps - 3] + b[steps - 2] + b[steps - 1]) / 5;
    std::printf("ZeRO-3 island of %d: mean loss of steps 1-5 %.4f, of steps 16-20 %.4f\n", n, first5, last5);
    CHECK(last5 < first5 - 0.1f * n);

    // Parameters, gradients and optimizer state per device: between 1/N and 1.05/N of the whole
    // model's, as the engine allocated them (the pieces are padded to pairs).
    const DeviceMemory whole = one->memory();
    const auto mem = island->memory();
    REQUIRE(mem.size() == static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        const double ratio = static_cast<double>(mem[r].state_bytes()) / static_cast<double>(whole.state_bytes());
        std::printf("ZeRO-3 rank %d of %d (%s): state %zu bytes = %.4f of one GPU's %zu (1/N = %.4f); gathered units %zu\n",
                    r, n, describe(c).c_str(), mem[r].state_bytes(), ratio, whole.state_bytes(), 1.0 / n,
                    mem[r].gathered_bytes);
        CHECK(ratio >= 1.0 / n);
        CHECK(ratio <= 1.05 / n);
        CHECK(mem[r].gathered_bytes > 0);
        CHECK(mem[r].gathered_bytes < whole.state_bytes() / 2);
    }
}

TEST_CASE("a ZeRO-3 island of GPUs resumes from its checkpoint bit for bit", "[cuda][island][zero3]") {
    const ModelConfig c = island_llama();
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    std::vector<float> straight, replay;
    {
        auto island = gpu_island(c, data.config(1), n, Parallel::zero3);
        island->init_weights(4);
        for (int s = 0; s < 6; ++s) straight.push_back(island->step().loss);
    }
    const std::string ckpt = data.dir.file("zero3.bin");
    {
        auto island = gpu_island(c, data.config(1), n, Parallel::zero3);
        island->init_weights(4);
        for (int s = 0; s < 3; ++s) replay.push_back(island->step().loss);
        island->save(ckpt);
    }
    {
        auto island = gpu_island(c, data.config(1), n, Parallel::zero3);
        island->resume(ckpt);
        for (int s = 3; s < 6; ++s) replay.push_back(island->step().loss);
    }
    for (int s = 0; s < 6; ++s) {
        INFO("step " << s + 1 << ": straight " << straight[s] << ", replay " << replay[s]);
        CHECK(std::memcmp(&straight[s], &replay[s], sizeof(float)) == 0);
    }
}

TEST_CASE("a DiLoCo peer's ZeRO-3 island of GPUs: Δ encoded per shard, θ bit-identical to the host", "[cuda][island][zero3]") {
    // The peer's side of three rounds (peers/diloco/island_worker.cpp): start from the host's θ,
    // train, encode Δ per shard (kernels/cuda/island_codec.h); the host decodes it and takes an
    // outer step. The per-shard bytes must be the CPU codec's bytes for the gathered Δ (codec blocks
    // straddle the shards' borders here), and the island must hold exactly the host's θ each round.
    const ModelConfig c = island_model();
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    auto island = gpu_island(c, data.config(1), n, Parallel::zero3);
    std::vector<float> theta = init_params(c, 11), theta_i(theta.size());
    const char* specs[] = {"int8:block=64", "int4:block=256+zstd:1", "fp4:block=32"};
    for (int round = 0; round < 3; ++round) {
        const std::string spec = specs[round];
        INFO("round " << round << ", " << spec);
        island->set_params(theta);
        island->get_params(theta_i);
        CHECK(std::memcmp(theta_i.data(), theta.data(), theta.size() * sizeof(float)) == 0);
        for (int s = 0; s < 2; ++s) island->step();
        const auto bytes = cuda::encode_island_delta(*island, theta, spec);
        REQUIRE(bytes.has_value());
        island->get_params(theta_i);
        std::vector<float> delta(theta.size());
        for (std::size_t i = 0; i < delta.size(); ++i) delta[i] = theta[i] - theta_i[i];
        CHECK(*bytes == compression::make_codec(spec)->encode(delta));
        const std::vector<float> decoded = compression::decode(*bytes, theta.size());
        for (std::size_t i = 0; i < theta.size(); ++i) theta[i] -= 0.7f * decoded[i];
    }
    // Codecs without a device encoder (error feedback) go back to the host's path.
    CHECK_FALSE(cuda::encode_island_delta(*island, theta, "int8+ef").has_value());
    // A non-finite Δ: the CPU codec's message, and the island goes on.
    std::vector<float> bad = theta;
    bad[1234] = std::nanf("");
    CHECK_THROWS_WITH(cuda::encode_island_delta(*island, bad, "int8"), Catch::Contains("input element 1234 is NaN"));
    CHECK(cuda::encode_island_delta(*island, theta, "int8").has_value());
    island->step();
}
