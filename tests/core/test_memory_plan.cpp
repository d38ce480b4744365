// tests/core/test_memory_plan.cpp: core/memory_plan.h against what the CPU engine allocates (one
// device for tiny, small, gpt2-124m and llama-tiny; DDP and ZeRO-3 islands of 2 for tiny and
// llama-tiny), each category within 10%, printed as a table; and the Llama-2-7B / 13B-shaped
// answers on 4 x 24 GiB GPUs, pure arithmetic. The CUDA model's side is
// tests/cuda/test_cuda_memory_plan.cpp.
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/hf_import.h"
#include "core/island.h"
#include "core/memory_plan.h"
#include "core/rng.h"
#include "core/token_shard.h"
#include "core/transformer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_collective.h"
#include "tests/core/temp_dir.h"

using namespace arch;

namespace {

// Plan against engine, category by category, printed when the case ends.
class Table {
  public:
    // Each category within 10% of the engine's bytes (both zero counts as equal).
    void compare(const std::string& what, const DeviceBytes& plan, const DeviceMemory& m) {
        const std::pair<const char*, std::pair<std::size_t, std::size_t>> cats[] = {
            {"params", {plan.params, m.params_bytes}},
            {"grads", {plan.grads, m.grads_bytes}},
            {"optimizer", {plan.optimizer, m.optimizer_bytes}},
            {"activations", {plan.activations, m.activations_bytes}},
            {"workspace", {plan.workspace, m.workspace_bytes}},
            {"comm", {plan.comm, m.gathered_bytes}},
        };
        for (const auto& [name, pm] : cats) {
            const auto [p, measured] = pm;
            rows_.push_back({what, name, p, measured});
            INFO(what << " " << name << ": plan " << p << " bytes, engine " << measured);
            if (measured == 0)
                CHECK(p == 0);
            else
                CHECK(std::abs(static_cast<double>(p) / static_cast<double>(measured) - 1.0) <=
                      0.10);
        }
    }
    ~Table() {
        std::printf("\n%-44s %-12s %12s %12s %9s\n", "engine (cpu, fp32)", "category", "plan",
                    "measured", "plan/meas");
        for (const Row& r : rows_) {
            char ratio[16] = "-";
            if (r.measured)
                std::snprintf(ratio, sizeof ratio, "%.3f",
                              static_cast<double>(r.plan) / static_cast<double>(r.measured));
            std::printf("%-44s %-12s %12s %12s %9s\n", r.what.c_str(), r.category.c_str(),
                        format_bytes(r.plan).c_str(), format_bytes(r.measured).c_str(), ratio);
        }
    }

  private:
    struct Row {
        std::string what, category;
        std::size_t plan, measured;
    };
    std::vector<Row> rows_;
};

std::vector<int> tokens(std::size_t n, int vocab, uint64_t seed) {
    Rng rng(seed);
    std::vector<int> t(n);
    for (int& x : t) x = static_cast<int>(rng.below(static_cast<uint64_t>(vocab)));
    return t;
}

PlanRequest cpu_request(const ModelConfig& c, int devices, Parallel parallel, int B, int T) {
    PlanRequest q;
    q.model = c;
    q.device = PlanDevice::cpu;
    q.devices = devices;
    q.parallel = parallel;
    q.B = B;
    q.T = T;
    return q;
}

struct Shards {  // token shards for an island (ids below 64, valid for every preset)
    TempDir dir;
    Shards() {
        std::vector<uint16_t> t(4000);
        for (std::size_t i = 0; i < t.size(); ++i)
            t[i] = static_cast<uint16_t>((i * 7 + i / 5) % 64);
        write_token_shard(dir.file("train_000000.bin"), t);
    }
    TrainConfig config(int B, int T) const {
        TrainConfig t;
        t.B = B;
        t.T = T;
        t.steps = 2;
        t.schedule.total_steps = 2;
        t.train_pattern = dir.file("train_*.bin");
        return t;
    }
};

ModelConfig llama_shape(int L, int C, int NH, int F) {
    ModelConfig c;
    c.family = ModelFamily::llama;
    c.num_layers = L;
    c.channels = C;
    c.num_heads = c.num_kv_heads = NH;
    c.ffn_hidden = F;
    c.vocab_size = 32000;
    c.padded_vocab_size = pad_vocab(32000);
    c.max_seq_len = 4096;
    c.tied_embeddings = false;
    return c;
}

PlanRequest home_rig(
    const ModelConfig& c) {  // 4 x 24 GiB, ZeRO-3 + recompute block + offload optimizer
    PlanRequest q;
    q.model = c;
    q.device = PlanDevice::cuda;
    q.devices = 4;
    q.device_memory_bytes = parse_bytes("24GiB");
    q.B = 1;
    q.T = 2048;
    q.parallel = Parallel::zero3;
    q.recompute = Recompute::block;
    q.offload = Offload::optimizer;
    return q;
}

void print_answer(const char* name, const MemoryPlan& p) {
    const DeviceBytes& d = p.device;
    std::printf(
        "%s (%.2fB params) on 4 x 24 GiB, zero3 + recompute block + offload optimizer, B=1 T=2048: "
        "%s, "
        "max micro-batch %d\n  per device %s = params %s + grads %s + optimizer %s + activations "
        "%s + "
        "workspace %s + comm %s + reserve %s\n  host %s = offloaded master/m/v %s + staging %s + "
        "DiLoCo peer %s\n",
        name, p.num_params / 1e9, p.fits ? "fits" : "does not fit", p.max_micro_batch,
        format_bytes(d.total()).c_str(), format_bytes(d.params).c_str(),
        format_bytes(d.grads).c_str(), format_bytes(d.optimizer).c_str(),
        format_bytes(d.activations).c_str(), format_bytes(d.workspace).c_str(),
        format_bytes(d.comm).c_str(), format_bytes(d.reserve).c_str(),
        format_bytes(p.host.total()).c_str(), format_bytes(p.host.offloaded_optimizer).c_str(),
        format_bytes(p.host.offload_staging).c_str(), format_bytes(p.host.diloco()).c_str());
}

}  // namespace

TEST_CASE("plan matches the CPU engine's own allocations on one device") {
    struct Case {
        const char* preset;
        int B, T;
    };
    Table table;
    for (const Case& k : {Case{"tiny", 4, 128}, Case{"small", 4, 256}, Case{"gpt2-124m", 1, 256},
                          Case{"llama-tiny", 4, 128}}) {
        const ModelConfig c = model_preset(k.preset);
        auto model = make_transformer(c, make_cpu_backend());
        const std::vector<int> in = tokens(static_cast<std::size_t>(k.B) * k.T, c.vocab_size, 1);
        const std::vector<int> tg = tokens(in.size(), c.vocab_size, 2);
        model->forward(in.data(), tg.data(), k.B, k.T);  // sizes the activations
        const MemoryPlan p = plan_memory(cpu_request(c, 1, Parallel::ddp, k.B, k.T));
        table.compare(
            std::string(k.preset) + " cpu x1 B" + std::to_string(k.B) + " T" + std::to_string(k.T),
            p.device, model->memory());
    }
}

TEST_CASE("plan matches the CPU engine's own allocations in DDP and ZeRO-3 islands") {
    Shards data;
    Table table;
    const int B = 2, T = 32;
    for (const char* preset : {"tiny", "llama-tiny"})
        for (Parallel parallel : {Parallel::ddp, Parallel::zero3}) {
            const ModelConfig c = model_preset(preset);
            std::vector<std::unique_ptr<Backend>> backends;
            for (int r = 0; r < 2; ++r) backends.push_back(make_cpu_backend());
            Island island(c, data.config(B, T), parallel, std::move(backends),
                          make_cpu_collectives(2));
            island.init_weights(1);
            island.step();
            const MemoryPlan p = plan_memory(cpu_request(c, 2, parallel, B, T));
            const auto mem = island.memory();
            for (int r = 0; r < 2; ++r)
                table.compare(std::string(preset) + " cpu " + parallel_name(parallel) + " rank " +
                                  std::to_string(r) + "/2 B" + std::to_string(B) + " T" +
                                  std::to_string(T),
                              p.device, mem[r]);
        }
}

TEST_CASE("Llama-2-7B and 13B shapes on 4 x 24 GiB GPUs with ZeRO-3, recompute block and offload") {
    const MemoryPlan seven = plan_memory(home_rig(llama_shape(32, 4096, 32, 11008)));
    const MemoryPlan thirteen = plan_memory(home_rig(llama_shape(40, 5120, 40, 13824)));
    print_answer("Llama-2-7B-shaped", seven);
    print_answer("Llama-2-13B-shaped", thirteen);
    CHECK(seven.num_params == 6738415616);  // Llama-2-7B's published count
    CHECK(seven.fits);
    CHECK(seven.max_micro_batch >= 1);
    CHECK(thirteen.num_params == 13015864320);
    // Without offload and recompute the 7B shape does not fit: the plan's answer depends on both.
    PlanRequest plain = home_rig(llama_shape(32, 4096, 32, 11008));
    plain.offload = Offload::none;
    CHECK_FALSE(plan_memory(plain).fits);
    plain.offload = Offload::optimizer;
    plain.recompute = Recompute::none;
    const MemoryPlan no_recompute = plan_memory(plain);
    CHECK(no_recompute.device.activations > 4 * seven.device.activations);
}

TEST_CASE("an 8B Llama's DiLoCo peer: θ, the residual and the update in RAM; the update alone with its state on disk, P more with DES-LOC") {
    ModelConfig c = llama_shape(32, 4096, 32, 14336);
    c.num_kv_heads = 8;
    c.vocab_size = 128256;
    c.padded_vocab_size = pad_vocab(c.vocab_size);
    PlanRequest q = home_rig(c);
    q.update_bytes_per_param = 1.0 + 4.0 / 256;  // int8 with a scale per block of 256
    const MemoryPlan p = plan_memory(q);
    CHECK(p.num_params == 8030261248);  // Llama-3-8B's published count
    const std::size_t P = p.num_params * sizeof(float);
    const HostBytes& h = p.host;
    CHECK(h.theta_replica == P);
    CHECK(h.pseudo_gradient == 0);  // Δ formed in the residual, θ_i read from the GPUs' shards a slice at a time
    CHECK(h.ef_residual == P);
    CHECK(h.update == static_cast<std::size_t>(static_cast<double>(p.num_params) * q.update_bytes_per_param));
    CHECK(h.diloco() == 2 * P + h.update);  // no outer momentum, no decoded update (protocol 9)
    CHECK(h.diloco_on_disk() == 2 * P);
    CHECK(h.total() - h.total_state_on_disk() == 2 * P);
    const std::size_t in_ram_on_disk = h.diloco() - h.diloco_on_disk();
    CHECK(in_ram_on_disk == h.update);
    std::printf("8B Llama's DiLoCo peer: %s in RAM, %s with --state-on-disk (%s on disk); the whole host %s, %s\n",
                format_bytes(h.diloco()).c_str(), format_bytes(in_ram_on_disk).c_str(), format_bytes(h.diloco_on_disk()).c_str(),
                format_bytes(h.total()).c_str(), format_bytes(h.total_state_on_disk()).c_str());
    PlanRequest plain = q;  // no error feedback: Δ whole beside θ
    plain.error_feedback = false;
    CHECK(plan_memory(plain).host.pseudo_gradient == P);
    CHECK(plan_memory(plain).host.diloco() == 2 * P + h.update);
    PlanRequest cpu = q;  // one CPU device reads θ_i in slices too
    cpu.device = PlanDevice::cpu;
    cpu.devices = 1;
    cpu.parallel = Parallel::ddp;
    cpu.offload = Offload::none;
    cpu.recompute = Recompute::none;
    CHECK(plan_memory(cpu).host.pseudo_gradient == 0);
    CHECK(plan_memory(cpu).host.diloco() == 2 * P + h.update);
    PlanRequest overlap = q;  // run.mode = "overlap": θ_i at the send and the merge's scratch
    overlap.overlap = true;
    CHECK(plan_memory(overlap).host.overlap_carry == 2 * P);
    CHECK(plan_memory(overlap).host.diloco() == 4 * P + h.update);
    // DES-LOC (outer.sync_moments_every > 0, the default in sync mode): in its rounds the peer also
    // holds the moments in bf16 (P), as it sends its own and as the update brings their mean; they
    // leave and enter the engine a slice at a time, so nothing more. In RAM whatever is on disk.
    PlanRequest desloc = q;
    desloc.desloc = true;
    const HostBytes& d = plan_memory(desloc).host;
    CHECK(h.moments == 0);
    CHECK(d.moments == P);
    CHECK(d.diloco() == 3 * P + h.update);
    CHECK(d.diloco_on_disk() == 2 * P);
    std::printf("  with DES-LOC's moments: %s in RAM, %s with --state-on-disk\n", format_bytes(d.diloco()).c_str(),
                format_bytes(d.diloco() - d.diloco_on_disk()).c_str());
    CHECK(d.diloco() - d.diloco_on_disk() <= parse_bytes("64GiB"));
}

TEST_CASE("an HF config.json plans the same model as explicit sizes") {
    TempDir dir;
    {
        std::ofstream f(dir.file("config.json"));
        f << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 11008,
                 "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000,
                 "max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "hidden_act": "silu",
                 "tie_word_embeddings": false})";
    }
    const ModelConfig c = hf_model_config(dir.file("config.json"));
    CHECK(c == hf_model_config(dir.path.string()));  // the folder holding it
    const MemoryPlan a = plan_memory(home_rig(c));
    const MemoryPlan b = plan_memory(home_rig(llama_shape(32, 4096, 32, 11008)));
    CHECK(a.num_params == b.num_params);
    CHECK(a.device.total() == b.device.total());
    CHECK_THROWS_WITH(hf_model_config(dir.file("missing.json")), Catch::Contains("missing.json"));
}

TEST_CASE("plan refuses what it cannot plan, naming it") {
    PlanRequest q = cpu_request(model_preset("tiny"), 2, Parallel::zero3, 1, 0);
    CHECK(plan_memory(q).request.T == 128);  // 0: the model's max
    q.T = 4096;
    CHECK_THROWS_WITH(plan_memory(q), Catch::Contains("4096"));
    q.T = 64;
    q.offload = Offload::optimizer;
    CHECK_THROWS_WITH(plan_memory(q), Catch::Contains("offload"));
    CHECK(parse_bytes("24GiB") == 24ull << 30);
    CHECK(parse_bytes("24 GB") == 24000000000ull);
    CHECK(parse_bytes("512MiB") == 512ull << 20);
    CHECK(parse_bytes("1.5KiB") == 1536);
    CHECK_THROWS_WITH(parse_bytes("24 parsecs"), Catch::Contains("24 parsecs"));
    CHECK_THROWS_WITH(parse_bytes("GiB"), Catch::Contains("GiB"));
    CHECK_THROWS_WITH(parse_recompute("most"), Catch::Contains("most"));
}
