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

#include "core/trainer.h"
#include "kernels/cuda/cuda_model.h"
#include "tests/core/state_slices.h"
#include "tests/cuda/island_fixture.h"

using namespace arch;
using namespace cuda_test;

namespace {

// One micro-batch of one row per step (20 emulated steps stay short), a warmup of 2.
TrainConfig offload_config(const TrainData& data, int steps) {
    TrainConfig t = data.config(1, steps);
    t.B = 1;
    t.schedule.warmup_steps = 2;
    return t;
}

std::unique_ptr<cuda::CudaModel> model(const ModelConfig& c, Offload offload) {
    cuda::CudaModelOptions o;
    o.offload = offload;
    return cuda::make_cuda_model(c, o);
}

}  // namespace

TEST_CASE("offloaded AdamW follows the on-device trajectory with no optimizer state on the GPU", "[cuda][offload]") {
    const ModelConfig c = island_model();
    TrainData data;
    const int steps = 20;
    auto on_device = model(c, Offload::none), offloaded = model(c, Offload::optimizer);
    on_device->init_weights(7);
    offloaded->init_weights(7);
    Trainer a(*on_device, offload_config(data, steps)), b(*offloaded, offload_config(data, steps));
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
    const ModelConfig c = island_model();
    TrainData data;
    std::vector<float> straight, replay;
    {
        auto m = model(c, Offload::optimizer);
        m->init_weights(4);
        Trainer t(*m, offload_config(data, 6));
        for (int s = 0; s < 6; ++s) straight.push_back(t.step().loss);
    }
    const std::string ckpt = data.dir.file("offload.bin");
    {
        auto m = model(c, Offload::optimizer);
        m->init_weights(4);
        Trainer t(*m, offload_config(data, 6));
        for (int s = 0; s < 3; ++s) replay.push_back(t.step().loss);
        t.save(ckpt);
    }
    {
        auto m = model(c, Offload::optimizer);
        Trainer t(*m, offload_config(data, 6));
        t.resume(ckpt);
        for (int s = 3; s < 6; ++s) replay.push_back(t.step().loss);
    }
    for (int s = 0; s < 6; ++s) {
        INFO("step " << s + 1 << ": straight " << straight[s] << ", replay " << replay[s]);
        CHECK(std::memcmp(&straight[s], &replay[s], sizeof(float)) == 0);
    }
}

TEST_CASE("a ZeRO-3 island offloads its shards' optimizer state", "[cuda][offload][zero3]") {
#if ARCH_TEST_GPU_ISLANDS
    const ModelConfig c = island_model();
    TrainData data;
    const int n = usable_gpus() >= 2 ? 2 : 1;
    auto island = [&](Offload offload) {
        auto made = gpu_island(c, offload_config(data, 6), n, Parallel::zero3, offload);
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
#else
    std::printf("SKIPPED: this build has no NCCL, so no ZeRO-3 island of GPUs\n");
#endif
}

TEST_CASE("slices of offloaded state are the whole vectors; moments written in slices train as whole ones", "[cuda][offload]") {
    // The master weights, m and v in pinned host memory, read and written a slice at a time (a DES-LOC
    // peer's path), on one GPU and across a ZeRO-3 island's offloaded shards.
    const ModelConfig c = island_model();
    TrainData data;
    const TrainConfig t = offload_config(data, 4);
    auto one = model(c, Offload::optimizer), twin = model(c, Offload::optimizer);
    one->init_weights(6);
    twin->init_weights(6);
    Trainer ta(*one, t), tb(*twin, t);
    for (int s = 0; s < 2; ++s) {
        ta.step();
        tb.step();
    }
    state_slices::check(ta, tb);
#if ARCH_TEST_GPU_ISLANDS
    state_slices::check_twins([&] {
        auto made = gpu_island(c, t, usable_gpus() >= 2 ? 2 : 1, Parallel::zero3, Offload::optimizer);
        made->init_weights(6);
        return made;
    });
#else
    std::printf("SKIPPED (the ZeRO-3 island): this build has no NCCL, so no island of GPUs\n");
#endif
}
