// tests/cuda/test_cuda_offload.cpp: optimizer offload (CudaModelOptions::offload, kernels/cuda/
// host_adamw.h): the fp32 master weights, m and v in pinned host memory and AdamW on the CPU follow
// the on-device AdamW's 20-step trajectory within the fp32 tolerance, hold no optimizer state on the
// device, and resume bit for bit; a ZeRO-3 island offloads its shards the same way. Runs on GPUs and
// emulated on the CPU (where the CPU collective stands in for NCCL).
// Tolerance: the CPU and the GPU evaluate AdamW's expression with different contractions and sqrt,
// so a few master weights differ in their last bits and a few bf16 roundings land one step apart:
// losses within 0.2%, parameters within 0.5% relative L2 after 20 steps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/island.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "core/trainer.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/core/temp_dir.h"
#ifdef ARCH_CUDA_EMULATED
#include "kernels/cpu/cpu_collective.h"
#elif defined(ARCH_HAVE_NCCL)
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/nccl_collective.h"
#endif

using namespace arch;

namespace {

ModelConfig offload_model() {
    ModelConfig c;
    c.max_seq_len = 32;
    c.vocab_size = 200;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    c.num_layers = 2;
    c.num_heads = 2;
    c.channels = 64;
    return c;
}

struct Data {
    TempDir dir;
    Data() {
        Rng rng(3);
        std::vector<uint16_t> tokens(20000);
        for (std::size_t i = 0; i < tokens.size(); ++i)
            tokens[i] = static_cast<uint16_t>(rng.uniform() < 0.2f ? rng.below(200) : (i * 11 + i / 5) % 200);
        write_token_shard(dir.file("train_000000.bin"), tokens);
    }
    TrainConfig config(int steps) const {
        TrainConfig t;
        t.B = 2;
        t.T = 32;
        t.grad_accum = 1;
        t.steps = steps;
        t.schedule.max_lr = 2e-3f;
        t.schedule.warmup_steps = 2;
        t.schedule.total_steps = steps;
        t.train_pattern = dir.file("train_*.bin");
        return t;
    }
};

std::unique_ptr<cuda::CudaModel> model(const ModelConfig& c, Offload offload) {
    cuda::CudaModelOptions o;
    o.offload = offload;
    return cuda::make_cuda_model(c, o);
}

double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        d += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
        n += static_cast<double>(b[i]) * b[i];
    }
    return std::sqrt(d / n);
}

}  // namespace

TEST_CASE("offloaded AdamW follows the on-device trajectory with no optimizer state on the GPU", "[cuda][offload]") {
    const ModelConfig c = offload_model();
    Data data;
    const int steps = 20;
    auto on_device = model(c, Offload::none), offloaded = model(c, Offload::optimizer);
    on_device->init_weights(7);
    offloaded->init_weights(7);
    Trainer a(*on_device, data.config(steps)), b(*offloaded, data.config(steps));
    for (int s = 0; s < steps; ++s) {
        const float la = a.step().loss, lb = b.step().loss;
        INFO("step " << s + 1 << ": on device " << la << ", offloaded " << lb);
        CHECK(std::abs(la - lb) <= 2e-3f * la);
    }
    std::vector<float> pa(on_device->num_params()), pb(pa.size());
    on_device->get_params(pa);
    offloaded->get_params(pb);
    const double err = rel_l2(pb, pa);
    std::printf("offload: 20 steps, parameters %.2e relative L2 from on-device AdamW\n", err);
    CHECK(err <= 5e-3);
    CHECK(err > 0.0);  // really a second implementation

    const DeviceMemory dm = on_device->memory(), om = offloaded->memory();
    std::printf("device optimizer state: on device %zu bytes, offloaded %zu bytes\n", dm.optimizer_bytes, om.optimizer_bytes);
    CHECK(dm.optimizer_bytes == 12 * on_device->num_params());
    CHECK(om.optimizer_bytes == 0);
    CHECK(om.params_bytes == dm.params_bytes);
    CHECK(om.grads_bytes == dm.grads_bytes);
    CHECK(offloaded->allocated_bytes() + 11 * offloaded->num_params() < on_device->allocated_bytes());
}

TEST_CASE("an offloaded run resumes bit for bit", "[cuda][offload]") {
    const ModelConfig c = offload_model();
    Data data;
    std::vector<float> straight, replay;
    {
        auto m = model(c, Offload::optimizer);
        m->init_weights(4);
        Trainer t(*m, data.config(6));
        for (int s = 0; s < 6; ++s) straight.push_back(t.step().loss);
    }
    const std::string ckpt = data.dir.file("offload.bin");
    {
        auto m = model(c, Offload::optimizer);
        m->init_weights(4);
        Trainer t(*m, data.config(6));
        for (int s = 0; s < 3; ++s) replay.push_back(t.step().loss);
        t.save(ckpt);
    }
    {
        auto m = model(c, Offload::optimizer);
        Trainer t(*m, data.config(6));
        t.resume(ckpt);
        for (int s = 3; s < 6; ++s) replay.push_back(t.step().loss);
    }
    for (int s = 0; s < 6; ++s) {
        INFO("step " << s + 1 << ": straight " << straight[s] << ", replay " << replay[s]);
        CHECK(std::memcmp(&straight[s], &replay[s], sizeof(float)) == 0);
    }
}

TEST_CASE("a ZeRO-3 island offloads its shards' optimizer state", "[cuda][offload][zero3]") {
#ifdef ARCH_CUDA_EMULATED
    const int n = 2;
#elif defined(ARCH_HAVE_NCCL)
    const int n = cuda::device_count() >= 2 ? 2 : 1;
#else
    std::printf("SKIPPED: this build has no NCCL, so no ZeRO-3 island of GPUs\n");
    return;
#endif
#if defined(ARCH_CUDA_EMULATED) || defined(ARCH_HAVE_NCCL)
    const ModelConfig c = offload_model();
    Data data;
    auto island = [&](Offload offload) {
#ifdef ARCH_CUDA_EMULATED
        auto collectives = make_cpu_collectives(n);
#else
        std::vector<int> gpus;
        for (int r = 0; r < n; ++r) gpus.push_back(r);
        auto collectives = make_nccl_collectives(gpus);
#endif
        std::vector<std::unique_ptr<Model>> models;
        for (int r = 0; r < n; ++r) {
            cuda::CudaModelOptions o;
#ifndef ARCH_CUDA_EMULATED
            o.device = r;
#endif
            o.zero3 = collectives[r].get();
            o.offload = offload;
            models.push_back(cuda::make_cuda_model(c, o));
        }
        auto made = std::make_unique<Island>(c, data.config(6), std::move(models), std::move(collectives), Parallel::zero3);
        made->init_weights(8);
        return made;
    };
    auto on_device = island(Offload::none), offloaded = island(Offload::optimizer);
    for (int s = 0; s < 6; ++s) {
        const float la = on_device->step().loss, lb = offloaded->step().loss;
        INFO("step " << s + 1 << ": on device " << la << ", offloaded " << lb);
        CHECK(std::abs(la - lb) <= 2e-3f * la);
    }
    std::vector<float> pa(ParamLayout(c).num_params()), pb(pa.size());
    on_device->get_params(pa);
    offloaded->get_params(pb);
    CHECK(rel_l2(pb, pa) <= 5e-3);
    for (int r = 0; r < n; ++r) {
        CHECK(offloaded->memory()[r].optimizer_bytes == 0);
        CHECK(on_device->memory()[r].optimizer_bytes > 0);
    }
    // The gathered state is the same files as ever: save and resume continue bit for bit.
    const std::string ckpt = data.dir.file("zero3_offload.bin");
    offloaded->save(ckpt);
    const float next = offloaded->step().loss;
    auto resumed = island(Offload::optimizer);
    resumed->resume(ckpt);
    const float again = resumed->step().loss;
    CHECK(std::memcmp(&next, &again, sizeof(float)) == 0);
#endif
}
